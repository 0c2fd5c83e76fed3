package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"unhold/auth"
	"unhold/config"
)

// accountUsage is the help of "unhold user" and "unhold token".
const accountUsage = `Usage:
  unhold user add --role viewer|operator|admin NAME [flags]
        create a dashboard user; the password is asked for on a terminal,
        or read as the first line of standard input
  unhold user reset NAME [flags]
        set a new password for NAME (read the same way) and end their sessions
  unhold token add --role viewer|operator|admin NAME [flags]
        create an API token; the token alone is printed on standard output

The other flags are serve's (-db and so on).`

// accountCommand runs "unhold user …" and "unhold token …".
func accountCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" {
		fmt.Fprintln(stdout, accountUsage)
		if len(args) < 2 {
			return errors.New("say what to do: add or reset")
		}
		return nil
	}
	if strings.HasPrefix(args[1], "-") {
		return fmt.Errorf("say what to do first: unhold %s add|reset …\n\n%s", args[0], accountUsage)
	}
	what := args[0] + " " + args[1]
	role, rest, err := takeRole(args[2:])
	if err != nil {
		return err
	}
	cfg, names, err := loadWithNames(rest, getenv)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return fmt.Errorf("%s needs exactly one NAME\n\n%s", what, accountUsage)
	}
	name := names[0]
	needsRole := what == "user add" || what == "token add"
	switch {
	case what != "user add" && what != "user reset" && what != "token add":
		return fmt.Errorf("unknown command %q\n\n%s", "unhold "+what, accountUsage)
	case needsRole && role == "":
		return fmt.Errorf("%s needs --role viewer, operator or admin", what)
	case !needsRole && role != "":
		return fmt.Errorf("%s takes no --role", what)
	}
	log := newLogger(cfg.LogFormat, stderr)
	s, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	a := auth.New(s, auth.Options{Logger: log})
	host, _ := os.Hostname()
	by := "cli:" + host
	switch what {
	case "token add":
		r, err := auth.ParseRole(role)
		if err != nil {
			return err
		}
		_, secret, err := a.CreateAPIToken(ctx, name, r, by)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "token %q (%s) created; it is shown only this once\n", name, r)
		return nil
	case "user add":
		r, err := auth.ParseRole(role)
		if err != nil {
			return err
		}
		pw, err := readPassword(stdin, stderr, name)
		if err != nil {
			return err
		}
		if _, err := a.CreateUser(ctx, name, r, pw, by); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %q (%s) created\n", name, r)
		return nil
	}
	u, err := a.UserByName(ctx, name)
	if err != nil {
		return err
	}
	pw, err := readPassword(stdin, stderr, name)
	if err != nil {
		return err
	}
	if err := a.ResetPassword(ctx, u.ID, pw, by); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "password of %q reset; their sessions ended\n", name)
	return nil
}

// loadWithNames is config.Load for a command whose names may come before
// its flags ("user add NAME -db x"): the flag package stops at the first
// name, so each name is taken out and the rest parsed again.
func loadWithNames(args []string, getenv func(string) string) (config.Config, []string, error) {
	var names []string
	for {
		cfg, err := config.Load(args, getenv)
		if err != nil || len(cfg.Args) == 0 {
			return cfg, names, err
		}
		names = append(names, cfg.Args[0])
		flags := args[:len(args)-len(cfg.Args)]
		args = append(append([]string{}, flags...), cfg.Args[1:]...)
	}
}

// takeRole takes "--role X" or "--role=X" (one dash or two) out of args,
// wherever it is, and returns the rest for config.Load.
func takeRole(args []string) (string, []string, error) {
	var role string
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		flagName, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || flagName != "role" {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return "", nil, errors.New("--role needs a value: viewer, operator or admin")
			}
			i++
			value = args[i]
		}
		role = value
	}
	return role, rest, nil
}

// readPassword asks twice on a terminal without echo; otherwise it reads
// the first line of in.
func readPassword(in io.Reader, prompt io.Writer, name string) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(prompt, "password for %s: ", name)
		first, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprint(prompt, "again: ")
		second, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(first) != string(second) {
			return "", errors.New("the two passwords differ")
		}
		return string(first), nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on standard input")
	}
	return line, nil
}
