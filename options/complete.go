package options

import (
	"github.com/spf13/pflag"
)

// Complete finishes the options of a command whose flags fs parsed into o, for the command's
// groups (bound to o): when --config names a file, the file is read onto the defaults and the
// flags given are set again on top; then the environment, where a group reads it, unless a flag
// said otherwise; then every group is checked. Every problem is an input.Error.
func Complete(o *Options, fs *pflag.FlagSet, groups []Group) error {
	if o.ConfigFile != "" {
		if err := loadUnderFlags(o, fs); err != nil {
			return err
		}
	}
	for _, g := range groups {
		if env, ok := g.(EnvGroup); ok {
			if err := env.ApplyEnv(fs); err != nil {
				return err
			}
		}
	}
	return Validate(groups...)
}

// loadUnderFlags makes o the --config file's options on the defaults, with the flags fs was given
// (bound to o) set again on top: a flag wins over the file, and a list flag replaces the file's
// list.
func loadUnderFlags(o *Options, fs *pflag.FlagSet) error {
	type given struct {
		flag  *pflag.Flag
		value string
		list  []string
	}
	var flags []given
	fs.Visit(func(f *pflag.Flag) {
		g := given{flag: f, value: f.Value.String()}
		if list, ok := f.Value.(pflag.SliceValue); ok {
			g.list = list.GetSlice()
		}
		flags = append(flags, g)
	})
	base, err := LoadConfigFile(o.ConfigFile, Default())
	if err != nil {
		return err
	}
	base.Version = o.Version
	*o = base
	for _, g := range flags {
		var err error
		if list, ok := g.flag.Value.(pflag.SliceValue); ok {
			err = list.Replace(g.list)
		} else {
			err = g.flag.Value.Set(g.value)
		}
		if err != nil {
			return err // it took this value once
		}
	}
	return nil
}
