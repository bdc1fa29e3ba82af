package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// compileSchemaOutput runs `scalegate schema NAME` and compiles what it
// prints with an independent JSON Schema validator.
func compileSchemaOutput(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	env, out, errb := testEnv(nil)
	if code := Run(context.Background(), env, []string{"schema", name}); code != 0 {
		t.Fatalf("schema %s: exit %d: %s", name, code, errb)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("schema %s does not print JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("schema %s is not a JSON Schema: %v", name, err)
	}
	return s
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaReportValidatesRealReport: the printed schema accepts a real
// swarm report (the pr profile's, 64 clients on the reference server) and
// its server_tick, and refuses the same report once a required field is
// gone or a count is negative: it is the contract, not an empty schema.
func TestSchemaReportValidatesRealReport(t *testing.T) {
	s := compileSchemaOutput(t, "report")
	b, err := os.ReadFile("testdata/report-pr.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(decodeJSON(t, b)); err != nil {
		t.Fatalf("a real report does not validate: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(map[string]any){
		func(m map[string]any) { delete(m, "clients_connected") },
		func(m map[string]any) { m["clients"] = -1 },
		func(m map[string]any) { m["worker_pacing"] = "sometimes" },
		func(m map[string]any) { m["server_tick"].(map[string]any)["tick_ms"] = "fast" },
	} {
		c := map[string]any{}
		json.Unmarshal(b, &c)
		bad(c)
		nb, _ := json.Marshal(c)
		if err := s.Validate(decodeJSON(t, nb)); err == nil {
			t.Errorf("schema accepts a broken report: %.200s", nb)
		}
	}
	st := compileSchemaOutput(t, "server-tick")
	tick, _ := json.Marshal(m["server_tick"])
	if err := st.Validate(decodeJSON(t, tick)); err != nil {
		t.Errorf("the report's server_tick does not validate as a metrics file: %v", err)
	}
}

func TestSchemaUsage(t *testing.T) {
	for _, args := range [][]string{{"schema"}, {"schema", "profile"}, {"schema", "report", "extra"}} {
		env, out, errb := testEnv(nil)
		if code := Run(context.Background(), env, args); code != int(exitcode.Usage) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		if !strings.Contains(errb.String(), "report") {
			t.Errorf("%v: stderr %q does not name the documents", args, errb)
		}
	}
}
