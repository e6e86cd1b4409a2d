// Command catalog checks files of the operator catalog (rules/catalog/*.yaml) one by one:
//
//	go run ./hack/catalog check rules/catalog/karpenter.yaml ...
//
// Each problem is printed with its file and key; the exit code is 1 if there is any.
package main

import (
	"fmt"
	"os"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "check" {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/catalog check FILE...")
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[2:] {
		data, err := os.ReadFile(file)
		if err == nil {
			_, err = rules.ParseCatalogFile(file, data)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
			continue
		}
		fmt.Println(file + ": ok")
	}
	if failed {
		os.Exit(1)
	}
}
