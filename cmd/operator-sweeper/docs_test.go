package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// docTable is a table of a page: the heading it stands under, and its rows as cells.
type docTable struct {
	heading string
	rows    [][]string
}

// docTables returns every table of a page with the given header line, in order.
func docTables(t *testing.T, page, header string) []docTable {
	t.Helper()
	data, err := os.ReadFile("../../" + page)
	require.NoError(t, err)
	var tables []docTable
	heading := ""
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") {
			heading = strings.TrimSpace(strings.TrimLeft(lines[i], "#"))
		}
		if lines[i] != header {
			continue
		}
		table := docTable{heading: heading}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ { // past |---|
			var cells []string
			for _, cell := range regexp.MustCompile(`[^\\]\|`).Split(strings.Trim(lines[i], "|"), -1) {
				cells = append(cells, strings.TrimSpace(cell))
			}
			table.rows = append(table.rows, cells)
		}
		tables = append(tables, table)
	}
	require.NotEmpty(t, tables, "%s has no table %q", page, header)
	return tables
}

var backticked = regexp.MustCompile("`([^`]*)`")

// takers are the commands that take each flag of a group or a global flag (not a command's own).
func takers() map[string][]string {
	out := map[string][]string{}
	for _, c := range commands() {
		o := options.Default()
		fs, _ := newFlagSet(c, &o)
		own := pflag.NewFlagSet("own", pflag.ContinueOnError)
		c.addFlags(own)
		fs.VisitAll(func(f *pflag.Flag) {
			if own.Lookup(f.Name) == nil {
				out[f.Name] = append(out[f.Name], commandTitle(c))
			}
		})
	}
	return out
}

// TestDocsDocumentEveryFlag keeps the configuration reference and the code in sync: each flag has
// one row, under the heading of its group that names the commands that take it; its config key
// is the options' JSON key, and a literal default is the flag's default.
func TestDocsDocumentEveryFlag(t *testing.T) {
	byFlag := map[string][]string{}
	heading := map[string]string{}
	for _, table := range docTables(t, "docs/configuration.md", "| flag | config key | default | meaning |") {
		for _, row := range table.rows {
			require.Len(t, row, 4, "row %v", row)
			names := backticked.FindAllStringSubmatch(row[0], -1)
			require.NotEmpty(t, names, "row %v names no flag", row)
			flag := names[len(names)-1][1]
			assert.NotContains(t, byFlag, flag, "%s has two rows", flag)
			byFlag[flag], heading[flag] = row, table.heading
		}
	}

	// The config keys of settings; "rules" and "finalizers" are sections of their own, checked below.
	keys := map[string]bool{}
	for _, field := range reflect.VisibleFields(reflect.TypeFor[options.Options]()) {
		if key, _, _ := strings.Cut(field.Tag.Get("json"), ","); !field.Anonymous && key != "-" && key != "finalizers" {
			keys[key] = true
		}
	}

	o := options.Default()
	fs := pflag.NewFlagSet("every", pflag.ContinueOnError)
	for _, c := range commands() {
		addFlagsOf(fs, c, &o)
	}
	takenBy := takers()
	fs.VisitAll(func(f *pflag.Flag) {
		if takenBy[f.Name] == nil {
			return // a command's own flag, described with its command
		}
		row, ok := byFlag["--"+f.Name]
		if !assert.True(t, ok, "docs/configuration.md documents no --%s", f.Name) {
			return
		}
		delete(byFlag, "--"+f.Name)
		want := strings.ReplaceAll(strings.Join(takenBy[f.Name], ", "), "the sweep", "sweep")
		if f.Name == options.FlagConfig || f.Name == "version" {
			want = "every command" // a flag of no group
		}
		assert.True(t, strings.HasSuffix(heading["--"+f.Name], ": "+want), "--%s is taken by %s, but stands under %q", f.Name, want, heading["--"+f.Name])
		if keys[f.Name] {
			assert.Equal(t, "`"+f.Name+"`", row[1], "--%s: config key", f.Name)
		} else {
			assert.Empty(t, row[1], "--%s has no config key", f.Name)
		}
		if m := regexp.MustCompile("^`([^`]*)`$").FindStringSubmatch(row[2]); m != nil {
			assert.True(t, sameDefault(f.DefValue, m[1]), "--%s: the docs say default %q, the code %q", f.Name, m[1], f.DefValue)
		} else {
			assert.Contains(t, []string{"", "[]"}, f.DefValue, "--%s: a default in words, but the code has %q", f.Name, f.DefValue)
		}
	})
	assert.Empty(t, byFlag, "the docs document flags that do not exist")
}

func sameDefault(code, doc string) bool {
	code = strings.Trim(code, "[]")
	if c, err := time.ParseDuration(code); err == nil {
		d, err := time.ParseDuration(doc)
		return err == nil && c == d
	}
	return code == doc
}

// TestDocsDocumentEveryRuleSetting: every key under "rules" of the config file has a row.
func TestDocsDocumentEveryRuleSetting(t *testing.T) {
	documented := map[string]bool{}
	for _, table := range docTables(t, "docs/configuration.md", "| config key | meaning |") {
		for _, row := range table.rows {
			for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
				documented[m[1]] = true
			}
		}
	}
	for _, reg := range rules.Registry() {
		assert.True(t, documented["rules."+reg.Name+".enabled"], "rules.%s.enabled", reg.Name)
		args := reg.ArgsType()
		for j := range args.NumField() {
			key, _, _ := strings.Cut(args.Field(j).Tag.Get("json"), ",")
			assert.True(t, documented["rules."+reg.Name+"."+key], "rules.%s.%s", reg.Name, key)
		}
	}
	assert.True(t, documented["finalizers"])
}

// TestEveryRuleIsDocumented: the README's rule table and docs/rules.md have a row, in apply order,
// and a section for every rule of the registry.
func TestEveryRuleIsDocumented(t *testing.T) {
	names := options.RuleNames()
	for _, page := range []struct{ file, header string }{
		{"README.md", "| rule | finds | action | details |"},
		{"docs/rules.md", "| rule | finds | action |"},
	} {
		var listed []string
		for _, row := range docTables(t, page.file, page.header)[0].rows {
			listed = append(listed, strings.Trim(row[0], "`"))
		}
		assert.Equal(t, names, listed, "%s: one row per rule, in apply order", page.file)
	}
	data, err := os.ReadFile("../../docs/rules.md")
	require.NoError(t, err)
	for _, name := range names {
		assert.Contains(t, string(data), "\n## `"+name+"`\n", "docs/rules.md has a section on %s", name)
	}
	deploying, err := os.ReadFile("../../docs/deploying.md")
	require.NoError(t, err)
	for _, reg := range rules.Registry() {
		rule, err := reg.New(nil, rules.Settings{})
		require.NoError(t, err)
		if _, ok := rule.(rules.OptedIn); ok {
			assert.Contains(t, string(deploying), "\n- `manifests/components/opt-in-"+reg.Name+"`: ", "docs/deploying.md lists the component of %s's opt-in", reg.Name)
		}
	}
}
