// Command etcd is the etcd server, built the way go.etcd.io/etcd/server/v3's
// own main.go does it (a thin wrapper around etcdmain.Main).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
