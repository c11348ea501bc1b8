// Package config owns how a process is configured: standard library flags,
// each of which takes its default from an AR_* environment variable, so the
// same binary is driven by flags on a laptop and by env in a Kubernetes pod.
// Precedence: explicit flag > environment > the flag's built-in default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvPrefix starts every environment variable this package reads.
const EnvPrefix = "AR_"

// EnvName is the environment variable for a flag: "data-dir" -> "AR_DATA_DIR".
func EnvName(flagName string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return EnvPrefix + strings.ToUpper(r.Replace(flagName))
}

// EnvDefault sets the value of every flag defined on fs from its AR_*
// environment variable, when that variable is set and not empty. Call it
// after the flags are defined and before fs.Parse; flags given on the
// command line then overwrite these values. Every invalid value is reported,
// naming its variable. Each flag's usage also gains "(env AR_...)" so -help
// shows where a value may come from.
//
// An empty variable counts as unset: container specs often carry blank
// variables, and an empty string is not a valid int or duration anyway.
// Flags whose Set appends (repeatable flags) get the environment value and
// then the command-line ones added to it, not replaced.
func EnvDefault(fs *flag.FlagSet) error {
	return envDefault(fs, os.LookupEnv)
}

func envDefault(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		hint := "(env " + name + ")"
		if !strings.HasSuffix(f.Usage, hint) {
			f.Usage = strings.TrimSpace(f.Usage + " " + hint)
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			// The value is not echoed: the variable may hold a secret.
			errs = append(errs, fmt.Errorf("%s: invalid value for -%s: %w", name, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

// Parse applies EnvDefault to fs and then parses args: the one call a
// command needs after defining its flags.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := EnvDefault(fs); err != nil {
		return err
	}
	return fs.Parse(args)
}
