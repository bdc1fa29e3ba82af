// Package safetext escapes outside text before it reaches a person. Outside
// text is text that comes from outside scalegate (a custom server's output,
// a profile's description, an entity type, a file name). There is one
// function per output format:
//
//   - Terminal: a line for a terminal or a log. Control characters (ESC
//     sequences, CR, NUL, backspace, C1 controls) and bidirectional
//     overrides are shown escaped (\x1b, \r, \u202e), so outside text cannot
//     move the cursor, recolour, rewrite a line or draw a fake PASSED.
//   - MarkdownCell: one cell of a Markdown (GFM) table: no newline, no
//     unescaped |, no HTML, no link, no code span.
//   - MarkdownText: a paragraph line of Markdown: inline syntax and a
//     leading block marker (#, >, -, 1., <!--, a fence) are neutralised.
//   - MarkdownCode / MarkdownInlineCode: verbatim text in a fenced code block
//     or a code span whose fence is longer than any backtick run inside,
//     so the content can never close it.
//
// HTML output needs none of these: html/template escapes by context.
package safetext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// visible appends r, or its escaped form when r is a control character,
// a bidirectional formatting character or an invalid byte (r == RuneError
// with size 1, passed as bad). keepNewline and keepTab let code blocks keep
// their layout.
func visible(b *strings.Builder, r rune, bad byte, isBad, keepNewline, keepTab bool) {
	switch {
	case isBad:
		fmt.Fprintf(b, `\x%02x`, bad)
	case r == '\n' && keepNewline, r == '\t' && keepTab:
		b.WriteRune(r)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x20 || r == 0x7f:
		fmt.Fprintf(b, `\x%02x`, r)
	case r >= 0x80 && r <= 0x9f, isFormat(r):
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		b.WriteRune(r)
	}
}

// isFormat reports the invisible characters that reorder or hide text on
// screen: bidirectional embeddings, overrides and isolates, the line and
// paragraph separators, zero-width characters and the BOM.
func isFormat(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, // zero width space/joiners, LRM, RLM
		r >= 0x2028 && r <= 0x202e, // line/paragraph separator, embeddings, overrides
		r >= 0x2060 && r <= 0x2069, // word joiner, invisible operators, isolates
		r == 0xfeff, r == 0x061c:
		return true
	}
	return false
}

// each calls fn for every rune of s, with invalid bytes flagged.
func each(s string, fn func(r rune, bad byte, isBad bool)) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		fn(r, s[i], r == utf8.RuneError && size == 1)
		i += size
	}
}

// Terminal is s with every control character, bidirectional formatting
// character and invalid UTF-8 byte shown escaped: safe to print on one
// terminal line.
func Terminal(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	each(s, func(r rune, bad byte, isBad bool) { visible(&b, r, bad, isBad, false, false) })
	return b.String()
}

// clean reports whether s needs no escaping for a terminal (allowing
// newlines when multiline).
func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && !(multiline && c == '\n') || c == 0x7f || c >= 0x80 {
			return false
		}
	}
	return true
}

// TerminalLines is Terminal for text of several lines: newlines are kept,
// everything else is escaped as Terminal does.
func TerminalLines(s string) string {
	if clean(s, true) {
		return s
	}
	var b strings.Builder
	each(s, func(r rune, bad byte, isBad bool) { visible(&b, r, bad, isBad, true, false) })
	return b.String()
}

// Writer wraps w so that everything written to it goes through
// TerminalLines: a summary printer that embeds outside text (a server's
// refuse reasons, file names, warnings) in its lines cannot reach the
// terminal with a control character. Each Write must hold whole strings
// (fmt's functions write each formatted string in one call). It reports
// len(p) written when w took the escaped bytes.
func Writer(w io.Writer) io.Writer { return termWriter{w} }

type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, TerminalLines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// mdInline are the ASCII characters that start inline Markdown anywhere in
// a line: code spans, emphasis, links and images, raw HTML, entities,
// strikethrough, table pipes, and the backslash itself.
const mdInline = "\\`*_[]<>&|~!"

// escapeInline appends s with control characters made visible and every
// mdInline character backslash-escaped (CommonMark lets any ASCII
// punctuation be escaped, and the escape renders as the character).
func escapeInline(b *strings.Builder, s string) {
	var v strings.Builder
	each(s, func(r rune, bad byte, isBad bool) { visible(&v, r, bad, isBad, false, false) })
	for _, r := range v.String() {
		if r < utf8.RuneSelf && strings.ContainsRune(mdInline, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// MarkdownCell is s as the content of one GFM table cell: control
// characters (newlines included) shown escaped, and every character that
// could end the cell (|), start HTML, a link, emphasis or a code span
// backslash-escaped. Leading and trailing spaces are trimmed (the table
// would trim them anyway).
func MarkdownCell(s string) string {
	var b strings.Builder
	escapeInline(&b, strings.TrimSpace(s))
	return b.String()
}

// MarkdownText is s as one line of a Markdown paragraph: like MarkdownCell,
// and a leading block marker (a heading #, a quote >, a list item - + or
// "1.", a thematic break or setext underline, a fence, an HTML block
// "<!--", a table pipe) is escaped so the line stays plain text. Newlines
// are shown escaped, so s cannot start a second block.
func MarkdownText(s string) string {
	s = strings.TrimLeft(s, " \t") // four spaces would make a code block
	var b strings.Builder
	escapeInline(&b, s)
	out := b.String()
	if out == "" {
		return out
	}
	switch out[0] {
	case '#', '>', '-', '+', '=', '`', '~', ':':
		return `\` + out
	}
	// An ordered list item: up to nine digits, then "." or ")".
	digits := 0
	for digits < len(out) && digits < 10 && out[digits] >= '0' && out[digits] <= '9' {
		digits++
	}
	if digits > 0 && digits < len(out) && (out[digits] == '.' || out[digits] == ')') {
		return out[:digits] + `\` + out[digits:]
	}
	return out
}

// longestRun is the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// MarkdownCode is s as a fenced code block, ending in a newline. The fence
// is one backtick longer than the longest backtick run in s (three at
// least), so no line of s can close it; control characters other than
// newline and tab are shown escaped (a CR would end a line for Markdown,
// an ESC reach a terminal showing the raw file). lang is the info string
// ("sh"); anything but letters, digits, '-', '+' and '_' is dropped from it.
func MarkdownCode(lang, s string) string {
	var v strings.Builder
	each(s, func(r rune, bad byte, isBad bool) { visible(&v, r, bad, isBad, true, true) })
	body := strings.TrimSuffix(v.String(), "\n")
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	var info strings.Builder
	for _, r := range lang {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-+_", r)) {
			info.WriteRune(r)
		}
	}
	return fence + info.String() + "\n" + body + "\n" + fence + "\n"
}

// MarkdownInlineCode is s as a code span: delimited by one backtick more
// than its longest backtick run, padded with a space when it starts or ends
// with a backtick or a space, control characters (newlines included) shown
// escaped. Not for table cells: GFM splits cells on | even inside a code
// span; use MarkdownCell there.
func MarkdownInlineCode(s string) string {
	var v strings.Builder
	each(s, func(r rune, bad byte, isBad bool) { visible(&v, r, bad, isBad, false, false) })
	body := v.String()
	delim := strings.Repeat("`", longestRun(body, '`')+1)
	if body == "" || body[0] == '`' || body[len(body)-1] == '`' || body[0] == ' ' || body[len(body)-1] == ' ' {
		body = " " + body + " "
	}
	return delim + body + delim
}
