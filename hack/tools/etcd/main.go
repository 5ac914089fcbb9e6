// Command etcd builds the real etcd server from the Go module proxy, for local clusters and tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
