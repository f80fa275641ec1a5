#!/usr/bin/env bash
# Throwaway PKI and auth files for a loopback test kube-apiserver (tests/support/kube_cluster.h).
#   tests/kube/gen_pki.sh DIR
# Writes: ca.crt ca.key (the cluster CA), apiserver.crt apiserver.key (serving, SAN 127.0.0.1 and the
# in-cluster names), sa.key sa.pub (service-account token signing), tokens.csv (the static admin token
# "admin-token", group system:masters), admission.yaml (Pod Security: enforce baseline, as a
# provider's default would be; a namespace's pod-security labels override it).
set -euo pipefail
D="${1:?dir}"; mkdir -p "$D"; cd "$D"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=test-kube-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" > san.ext
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile san.ext -out apiserver.crt 2>/dev/null
rm -f apiserver.csr san.ext ca.srl
# service-account token signing key pair (RSA; ECDSA also accepted)
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
openssl pkey -in sa.key -pubout -out sa.pub
# static bearer tokens: token,user,uid,"group1,group2"
cat > tokens.csv <<'T'
admin-token,kube-admin,uid-admin,"system:masters"
T
# PodSecurity cluster-wide defaults (namespace labels pod-security.kubernetes.io/* still override)
cat > admission.yaml <<'A'
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: "baseline"
      enforce-version: "latest"
      audit: "restricted"
      audit-version: "latest"
      warn: "restricted"
      warn-version: "latest"
    exemptions:
      usernames: []
      runtimeClasses: []
      namespaces: ["kube-system"]
A
chmod 600 ca.key apiserver.key sa.key tokens.csv
