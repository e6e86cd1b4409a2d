package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// readmeTable returns the rows of the README's table with the given header line, as cells.
func readmeTable(t *testing.T, header string) [][]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(data), header+"\n")
	require.True(t, found, "README has no table %q", header)
	var rows [][]string
	for i, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // |---|---|
		}
		var cells []string
		for _, cell := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(cell))
		}
		rows = append(rows, cells)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]*)`")

// TestREADMEDocumentsEveryFlag keeps the README's configuration reference and the code in sync:
// each flag has a row, its config key is the options' JSON key, and a literal default is the
// flag's default.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	rows := readmeTable(t, "| flag | config key | default | meaning |")
	byFlag := map[string][]string{}
	for _, row := range rows {
		require.Len(t, row, 4, "row %v", row)
		names := backticked.FindAllStringSubmatch(row[0], -1)
		require.NotEmpty(t, names, "row %v names no flag", row)
		byFlag[names[len(names)-1][1]] = row
	}

	// The config keys of settings (PushOptions are inline); "rules" and "finalizers" are sections of
	// their own, checked below.
	keys := map[string]bool{}
	for _, field := range reflect.VisibleFields(reflect.TypeFor[sweeper.Options]()) {
		if key, _, _ := strings.Cut(field.Tag.Get("json"), ","); !field.Anonymous && key != "-" && key != "finalizers" {
			keys[key] = true
		}
	}

	fs, _ := newFlagSet(new(sweeper.DefaultOptions()), nil)
	fs.VisitAll(func(f *pflag.Flag) {
		row, ok := byFlag["--"+f.Name]
		if !assert.True(t, ok, "README documents no --%s", f.Name) {
			return
		}
		delete(byFlag, "--"+f.Name)
		if keys[f.Name] {
			assert.Equal(t, "`"+f.Name+"`", row[1], "--%s: config key", f.Name)
		} else {
			assert.Empty(t, row[1], "--%s has no config key", f.Name)
		}
		if m := regexp.MustCompile("^`([^`]*)`$").FindStringSubmatch(row[2]); m != nil {
			assert.True(t, sameDefault(f.DefValue, m[1]), "--%s: the README says default %q, the code %q", f.Name, m[1], f.DefValue)
		} else {
			assert.Contains(t, []string{"", "[]"}, f.DefValue, "--%s: a default in words, but the code has %q", f.Name, f.DefValue)
		}
	})
	assert.Empty(t, byFlag, "the README documents flags that do not exist")
}

func sameDefault(code, readme string) bool {
	code = strings.Trim(code, "[]")
	if c, err := time.ParseDuration(code); err == nil {
		r, err := time.ParseDuration(readme)
		return err == nil && c == r
	}
	return code == readme
}

// TestREADMEDocumentsEveryRuleSetting: every key under "rules" of the config file has a row.
func TestREADMEDocumentsEveryRuleSetting(t *testing.T) {
	documented := map[string]bool{}
	for _, row := range readmeTable(t, "| config key | meaning |") {
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			documented[m[1]] = true
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

// TestREADMEListsEveryShippedMapping: every shipped controller mapping has a row, which says
// whether it is protected.
func TestREADMEListsEveryShippedMapping(t *testing.T) {
	rows := readmeTable(t, "| finalizer pattern | controllers (any namespace) | Leases (any namespace) | upstream |")
	for _, owner := range rules.DefaultFinalizerOwners() {
		i := slices.IndexFunc(rows, func(row []string) bool { return strings.Contains(row[0], "`"+owner.Pattern+"`") })
		if assert.True(t, i >= 0, "README lists no mapping for %s", owner.Pattern) {
			assert.Equal(t, owner.Protect, strings.Contains(rows[i][0], "**protected**"), "%s: protected", owner.Pattern)
		}
	}
}
