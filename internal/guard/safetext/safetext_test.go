package safetext

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// md renders Markdown as GitHub does for the parts that matter here
// (CommonMark plus GFM tables and strikethrough; raw HTML is omitted, and
// the tests fail if any was recognised).
var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))

func render(t *testing.T, src string) string {
	t.Helper()
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hostile are inputs a custom server or a profile can supply.
var hostile = []string{
	"plain",
	"\x1b[32mPASSED\x1b[0m",
	"line1\nline2",
	"over\rwrite",
	"nul\x00byte",
	"bell\x07 back\x08space del\x7f",
	"csi\u009b31m",
	"rtl \u202eDESSAP\u202c",
	"bad utf8 \xff\xfe",
	"<!-- hide everything",
	"<script>alert(1)</script>",
	"a | b || c",
	"```\nfenced\n```",
	"````sh\nrm -rf /\n````",
	"# heading",
	"> quote",
	"- item",
	"1. item",
	"12) item",
	"===",
	"---",
	"~~~",
	"    indented code",
	"[click](http://evil.example)",
	"![img](http://evil.example/x.png)",
	"*em* _em_ **strong** ~~del~~",
	"&amp; &#60; &lt;",
	"back\\slash\\",
	"`code` ``double``",
	"tab\tseparated",
	"",
	" ",
	"ünïcødé ✓",
}

func TestTerminal(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b[32mPASSED\x1b[0m", `\x1b[32mPASSED\x1b[0m`},
		{"a\rb\nc\td\x00", `a\rb\nc\td\x00`},
		{"csi\u009b", `csi\u009b`},
		{"\u202eevil", `\u202eevil`},
		{"bad\xff", `bad\xff`},
		{"ünïcødé ✓", "ünïcødé ✓"},
	} {
		if got := Terminal(tc.in); got != tc.want {
			t.Errorf("Terminal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := TerminalLines("ok\n\x1b[2Kfake\n"); got != "ok\n\\x1b[2Kfake\n" {
		t.Errorf("TerminalLines = %q", got)
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := Writer(&b)
	n, err := fmt.Fprintf(w, "refused %v\n", map[string]int{"\x1b[2K\rPASSED": 1})
	if err != nil || n != len("refused map[\x1b[2K\rPASSED:1]\n") {
		t.Fatalf("n %d err %v", n, err)
	}
	if got := b.String(); got != "refused map[\\x1b[2K\\rPASSED:1]\n" {
		t.Fatalf("wrote %q", got)
	}
}

// checkTerminal is the terminal property: nothing a terminal would act on.
func checkTerminal(t *testing.T, in, out string, newlines bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q: output %q is not valid UTF-8", in, out)
	}
	for _, r := range out {
		if (r < 0x20 && !(newlines && r == '\n')) || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isFormat(r) {
			t.Fatalf("%q: output %q holds control character %U", in, out, r)
		}
	}
}

func FuzzTerminal(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkTerminal(t, s, Terminal(s), false)
		checkTerminal(t, s, TerminalLines(s), true)
		if clean(s, false) && Terminal(s) != s {
			t.Fatalf("clean %q changed to %q", s, Terminal(s))
		}
	})
}

// visibleForm is what a reader must see for s: Terminal's escapes.
func visibleForm(s string) string { return Terminal(s) }

var (
	tdRe  = regexp.MustCompile(`(?s)<tbody>\s*<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*</tr>\s*</tbody>`)
	tagRe = regexp.MustCompile(`<[a-z]`)
)

// checkCell renders s as the first of two cells and requires the table to
// keep its shape and the cell to show exactly s's visible form.
func checkCell(t *testing.T, s string) {
	t.Helper()
	cell := MarkdownCell(s)
	if strings.ContainsAny(cell, "\n\r") {
		t.Fatalf("%q: cell %q holds a line break", s, cell)
	}
	for i := 0; i < len(cell); i++ {
		if cell[i] == '|' && (i == 0 || cell[i-1] != '\\' || escapedBackslash(cell[:i-1])) {
			t.Fatalf("%q: cell %q holds an unescaped |", s, cell)
		}
	}
	out := render(t, "| a | b |\n|---|---|\n| "+cell+" | end |\n")
	m := tdRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%q: the table lost its shape:\n%s", s, out)
	}
	if m[2] != "end" {
		t.Fatalf("%q: the second cell became %q", s, m[2])
	}
	if tagRe.MatchString(m[1]) || strings.Contains(m[1], "<!--") {
		t.Fatalf("%q: markup in the cell: %s", s, m[1])
	}
	if got, want := html.UnescapeString(m[1]), visibleForm(strings.TrimSpace(s)); got != want {
		t.Fatalf("%q: the cell shows %q, want %q", s, got, want)
	}
}

// escapedBackslash reports whether s ends in an odd number of backslashes:
// then the backslash that follows s is itself escaped, and a | after that
// backslash is not.
func escapedBackslash(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func TestMarkdownCell(t *testing.T) {
	for _, s := range hostile {
		checkCell(t, s)
	}
}

func FuzzMarkdownCell(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkCell(t, s) })
}

var pRe = regexp.MustCompile(`(?s)^<p>(.*)</p>\n$`)

func checkText(t *testing.T, s string) {
	t.Helper()
	line := MarkdownText(s)
	if strings.ContainsAny(line, "\n\r") {
		t.Fatalf("%q: text %q holds a line break", s, line)
	}
	// Right after a paragraph line, so a setext underline would bite too.
	out := render(t, "intro\n\n"+line+"\n")
	want := strings.TrimRight(visibleForm(strings.TrimLeft(s, " \t")), " ")
	rest, ok := strings.CutPrefix(out, "<p>intro</p>\n")
	if !ok {
		t.Fatalf("%q: the intro changed:\n%s", s, out)
	}
	if want == "" {
		if rest != "" {
			t.Fatalf("%q: rendered %q, want nothing", s, rest)
		}
		return
	}
	m := pRe.FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("%q: not one plain paragraph:\n%s", s, rest)
	}
	if tagRe.MatchString(m[1]) || strings.Contains(m[1], "<!--") {
		t.Fatalf("%q: markup in the paragraph: %s", s, m[1])
	}
	if got := html.UnescapeString(m[1]); got != want {
		t.Fatalf("%q: the paragraph shows %q, want %q", s, got, want)
	}
}

func TestMarkdownText(t *testing.T) {
	for _, s := range hostile {
		checkText(t, s)
	}
}

func FuzzMarkdownText(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkText(t, s) })
}

var preRe = regexp.MustCompile(`(?s)^<pre><code class="language-sh">(.*)</code></pre>\n<p>after</p>\n$`)

func checkCode(t *testing.T, s string) {
	t.Helper()
	block := MarkdownCode("sh", s)
	if strings.ContainsRune(block, '\r') {
		t.Fatalf("%q: block holds a CR", s)
	}
	out := render(t, block+"after\n")
	m := preRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%q: the code block was broken out of:\n%s\nsource:\n%s", s, out, block)
	}
	var v strings.Builder
	each(s, func(r rune, bad byte, isBad bool) { visible(&v, r, bad, isBad, true, true) })
	want := strings.TrimSuffix(v.String(), "\n") + "\n"
	if got := html.UnescapeString(m[1]); got != want {
		t.Fatalf("%q: the block shows %q, want %q", s, got, want)
	}
}

func TestMarkdownCode(t *testing.T) {
	for _, s := range hostile {
		checkCode(t, s)
	}
	if got := MarkdownCode("s`h\n", "x"); !strings.HasPrefix(got, "```sh\n") {
		t.Errorf("info string not cleaned: %q", got)
	}
}

func FuzzMarkdownCode(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkCode(t, s) })
}

var codeRe = regexp.MustCompile(`(?s)^<p>x <code>(.*)</code> y</p>\n$`)

func checkInline(t *testing.T, s string) {
	t.Helper()
	out := render(t, "x "+MarkdownInlineCode(s)+" y\n")
	m := codeRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%q: not one code span:\n%s", s, out)
	}
	got, want := html.UnescapeString(m[1]), visibleForm(s)
	// CommonMark strips one padding space from each side unless the
	// content is all spaces.
	if strings.Trim(want, " ") == "" {
		got = strings.TrimSpace(got)
		want = ""
	}
	if got != want {
		t.Fatalf("%q: the span shows %q, want %q", s, got, want)
	}
}

func TestMarkdownInlineCode(t *testing.T) {
	for _, s := range hostile {
		checkInline(t, s)
	}
}

func FuzzMarkdownInlineCode(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkInline(t, s) })
}
