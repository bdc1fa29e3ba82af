// Package admin is the reference server's admin channel over a local Unix
// socket.
//
// The socket takes one command line, answers with one or more lines and
// closes the connection (docs/admin.md). The package owns the socket, the
// protocol and the command grammar; what a command does is the server's
// Handler.
package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxLine bounds a command line in bytes (newline excluded).
const MaxLine = 1024

// ErrorPrefix starts the one line of an answer that reports a failure.
const ErrorPrefix = "error: "

// readTimeout bounds how long a connection may take to send its line, so a
// silent client cannot hold a connection goroutine.
const readTimeout = 5 * time.Second

// maxConns bounds the connections served at once; more wait their turn.
const maxConns = 8

// maxSunPath is the longest socket path the kernel's sockaddr_un holds
// (108 bytes, NUL included).
const maxSunPath = 107

// Command is one parsed command line.
type Command struct {
	Name string
	Args []string
}

// String is the command as typed.
func (c Command) String() string { return strings.Join(append([]string{c.Name}, c.Args...), " ") }

// commands maps each command to its usage; the number of fields in the
// usage after the name is the number of arguments it takes.
var commands = map[string]string{
	"status":      "status",
	"tickstats":   "tickstats",
	"reload":      "reload",
	"trace-start": "trace-start DIR",
	"trace-stop":  "trace-stop",
}

// Usage lists the commands, for error lines and help text.
func Usage() string {
	return "status, tickstats, reload, trace-start DIR, trace-stop"
}

// Parse checks a command line: a known command with its number of
// arguments, printable UTF-8, at most MaxLine bytes. The command name ends
// at the first space or tab. A command that takes an argument (trace-start
// DIR) takes the rest of the line, without the spaces and tabs around it,
// so a directory may contain spaces (not start or end with one).
func Parse(line string) (Command, error) {
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if len(line) > MaxLine {
		return Command{}, fmt.Errorf("command line longer than %d bytes", MaxLine)
	}
	if !utf8.ValidString(line) || strings.ContainsFunc(line, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return Command{}, errors.New("command line is not printable UTF-8")
	}
	line = strings.Trim(line, " \t")
	if line == "" {
		return Command{}, fmt.Errorf("empty command (commands: %s)", Usage())
	}
	name, rest := line, ""
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		name, rest = line[:i], strings.Trim(line[i+1:], " \t")
	}
	usage, ok := commands[name]
	if !ok {
		return Command{}, fmt.Errorf("unknown command %q (commands: %s)", name, Usage())
	}
	takes := len(strings.Fields(usage)) - 1 // 0 or 1: the one argument is the rest of the line
	if (takes == 0) != (rest == "") {
		return Command{}, fmt.Errorf("usage: %s", usage)
	}
	c := Command{Name: name}
	if takes == 1 {
		c.Args = []string{rest}
	}
	return c, nil
}

// Handler answers one parsed command with the lines to send back; a
// failure is one line starting with ErrorPrefix (see Errorf). It runs on
// the connection's goroutine: a handler that touches state owned by
// another goroutine must hand the work over to it.
type Handler func(Command) []string

// Errorf is an answer of one error line.
func Errorf(format string, a ...any) []string {
	return []string{ErrorPrefix + fmt.Sprintf(format, a...)}
}

// Server is a listening admin socket.
type Server struct {
	path string
	ln   *net.UnixListener
	quit chan struct{}
	// ctx ends when Close begins, like quit, for handlers whose work takes
	// a context (a config read).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	sem    chan struct{}
}

// Listen binds the socket at path (mode 0600: the channel can reload the
// server's configuration, so only its user may connect). A socket file left
// by a server that died is replaced; a path where a server answers, or that
// is not a socket, is an error naming the path.
//
// The socket is never reachable by another user, not even for a moment:
// bind creates the file with the process umask's mode (0777 under umask
// 000), so binding at path and then chmod'ing it leaves a window in which
// anyone may connect. Instead it is bound inside a fresh directory only
// this user can enter (0700), chmod'ed to 0600 there, and hard-linked to
// path, which fails if path appeared meanwhile (it never replaces a file).
// The umask is process-wide and is not touched.
func Listen(path string) (*Server, error) {
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{path: path, ln: ln, quit: make(chan struct{}), ctx: ctx, cancel: cancel, sem: make(chan struct{}, maxConns)}, nil
}

// listenPrivate binds a 0600 socket in a private directory beside path and
// links it to path (see Listen). The directory and the temporary name are
// removed whatever happens.
func listenPrivate(path string) (*net.UnixListener, error) {
	priv, err := os.MkdirTemp(filepath.Dir(path), ".admin-")
	if err != nil {
		return nil, fmt.Errorf("private directory: %w", err)
	}
	defer os.RemoveAll(priv)
	if err := os.Chmod(priv, 0o700); err != nil { // MkdirTemp's 0700 less the umask; never more
		return nil, fmt.Errorf("private directory: %w", err)
	}
	tmp := filepath.Join(priv, "s")
	ln, err := listenUnix(tmp)
	if err != nil {
		return nil, err
	}
	// Close must not unlink: the listener's own name is the temporary one
	// (or a /proc/self/fd alias); the socket file is removed by its path.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Link(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// clearStale removes a socket file nobody answers on.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("admin socket %s: the path exists and is not a socket", path)
	}
	c, err := dialUnix(path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("admin socket %s: another server is listening on it", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("admin socket %s: remove the stale socket: %w", path, err)
	}
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Serve starts the accept goroutine; h answers every well-formed command.
// Close stops it.
func (s *Server) Serve(h Handler) {
	s.wg.Go(func() { s.accept(h) })
}

func (s *Server) accept(h Handler) {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// A persistent accept error (fd exhaustion): back off rather
			// than spin; Close still ends the loop.
			select {
			case <-s.quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		// At most maxConns are answered at once; the rest wait for a slot
		// (and further ones in the kernel's listen backlog).
		select {
		case s.sem <- struct{}{}:
			s.wg.Go(func() {
				defer func() { <-s.sem }()
				s.serveConn(c, h)
			})
		case <-s.quit:
			c.Close()
			return
		}
	}
}

// serveConn reads one line, answers it and closes the connection.
func (s *Server) serveConn(c *net.UnixConn, h Handler) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	line, err := bufio.NewReaderSize(io.LimitReader(c, MaxLine+2), MaxLine+2).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		writeLines(c, Errorf("reading the command: %v", err))
		return
	}
	if err != nil && len(line) > MaxLine {
		writeLines(c, Errorf("command line longer than %d bytes", MaxLine))
		return
	}
	cmd, err := Parse(line)
	if err != nil {
		writeLines(c, Errorf("%v", err))
		return
	}
	writeLines(c, h(cmd))
}

func writeLines(c net.Conn, lines []string) {
	_ = c.SetWriteDeadline(time.Now().Add(readTimeout))
	w := bufio.NewWriter(c)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	_ = w.Flush()
}

// Quit is closed when Close begins: a handler waiting on other goroutines
// selects on it to answer instead of hanging.
func (s *Server) Quit() <-chan struct{} { return s.quit }

// Context ends when Close begins: a handler's blocking work (reading a
// file) takes it, so Close never waits on it.
func (s *Server) Context() context.Context { return s.ctx }

// Close stops accepting, waits for the connections being answered and
// removes the socket file. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		s.cancel()
		err = s.ln.Close()
		s.wg.Wait()
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	})
	return err
}

// NotAnsweringError is a socket no server answers on: nothing listens,
// or the server took the connection and gave no answer in time (it
// answers at most 8 connections at once, and gives a silent one 5 s to
// send its line, so a crowd of silent connections delays everyone).
type NotAnsweringError struct {
	Path string
	Err  error
	// Connected: the server accepted the connection and did not answer.
	Connected bool
}

// Error names the socket and says what to check.
func (e *NotAnsweringError) Error() string {
	if e.Connected {
		return fmt.Sprintf("the server on admin socket %s took the connection but gave no answer: %v (it answers %d connections at once; others may be holding them)", e.Path, e.Err, maxConns)
	}
	return fmt.Sprintf("no server answers on admin socket %s: %v (is the server running with [admin] socket set to this path?)", e.Path, e.Err)
}

// Unwrap returns the dial error.
func (e *NotAnsweringError) Unwrap() error { return e.Err }

// AnsweredError is the server's answer when it is an error line (the
// command was refused or failed). Msg is the line without ErrorPrefix.
type AnsweredError struct{ Msg string }

// Error is the server's message.
func (e *AnsweredError) Error() string { return e.Msg }

// Do sends one command line to the socket at path and returns the answer's
// lines. A dead socket is a *NotAnsweringError; an answer whose first line
// is an error line returns the lines and an *AnsweredError.
func Do(ctx context.Context, path, line string) ([]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	c, err := dialUnix(path, time.Until(deadline))
	if err != nil {
		return nil, &NotAnsweringError{Path: path, Err: err}
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		if na := noAnswer(ctx, path, err); na != nil {
			return nil, na
		}
		return nil, fmt.Errorf("admin socket %s: send: %w", path, err)
	}
	lines, err := readAnswer(ctx, c, path)
	if err != nil {
		return lines, err
	}
	if len(lines) == 0 {
		return nil, &NotAnsweringError{Path: path, Err: errors.New("the server closed the connection without an answer"), Connected: true}
	}
	if strings.HasPrefix(lines[0], ErrorPrefix) {
		return lines, &AnsweredError{Msg: strings.TrimPrefix(lines[0], ErrorPrefix)}
	}
	return lines, nil
}

// noAnswer is the *NotAnsweringError for err when it came from a deadline
// or a cancelled ctx while sending or reading, else nil: the server did not
// answer, which is the server's state, not a fault here.
func noAnswer(ctx context.Context, path string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return &NotAnsweringError{Path: path, Err: cerr, Connected: true}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &NotAnsweringError{Path: path, Err: fmt.Errorf("no answer by the deadline (%w)", err), Connected: true}
	}
	return nil
}

// readAnswer reads the answer's lines until the server closes the
// connection. A read that stops at the deadline with nothing read is no
// answer; one that stops part-way keeps the lines read so far.
func readAnswer(ctx context.Context, c net.Conn, path string) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		if na := noAnswer(ctx, path, err); na != nil && len(lines) == 0 {
			return nil, na
		}
		return lines, fmt.Errorf("admin socket %s: read the answer: %w", path, err)
	}
	return lines, nil
}

// listenUnix binds path. sun_path holds 107 bytes; a longer path (a deep
// results directory) is bound through the directory's /proc/self/fd entry,
// which the kernel resolves like the directory itself.
func listenUnix(path string) (*net.UnixListener, error) {
	var ln *net.UnixListener
	err := viaShortPath(path, func(p string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		return err
	})
	return ln, err
}

// dialUnix connects to path, through /proc/self/fd when it is too long.
func dialUnix(path string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := viaShortPath(path, func(p string) error {
		var err error
		c, err = net.DialTimeout("unix", p, timeout)
		return err
	})
	return c, err
}

// viaShortPath calls fn with path, or with a /proc/self/fd alias of it
// that fits sun_path while the directory is held open.
func viaShortPath(path string, fn func(string) error) error {
	if len(path) <= maxSunPath {
		return fn(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("path longer than %d bytes, and its directory cannot be opened to shorten it: %w", maxSunPath, err)
	}
	defer dir.Close()
	alias := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(alias) > maxSunPath {
		return fmt.Errorf("socket file name %q is too long", filepath.Base(path))
	}
	return fn(alias)
}
