package config_test

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentruntime/agentruntime/pkg/config"
)

func ExampleParse() {
	os.Setenv("AR_DATA_DIR", "/var/lib/agentruntime")
	os.Setenv("AR_LISTEN", "0.0.0.0:7070")
	defer os.Unsetenv("AR_DATA_DIR")
	defer os.Unsetenv("AR_LISTEN")

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./data", "where state lives")
	listen := fs.String("listen", "127.0.0.1:7070", "gRPC listen address")
	if err := config.Parse(fs, []string{"--listen", "127.0.0.1:9090"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*dataDir) // from the environment
	fmt.Println(*listen)  // the explicit flag wins
	// Output:
	// /var/lib/agentruntime
	// 127.0.0.1:9090
}
