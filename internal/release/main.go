// Command release builds and checks lanework's modules the way a consumer
// outside the repository sees them, and tags releases.
//
//	release [-root dir] proxy DIR          file proxy of every module at v0.0.0-worktree
//	release [-root dir] gowork-off         build and vet every module with GOWORK=off
//	release [-root dir] tidy [-check] DIR... go mod tidy every module (and DIRs)
//	release [-root dir] tag VERSION        commit VERSION requirements, tag every module
//
// Committed go.mod files require their siblings at the last release and
// committed go.sum files hold third-party hashes only; everything that needs
// a sibling without the workspace resolves it from the worktree proxy, with
// a temporary go.mod (-modfile) so the committed files are never rewritten.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	root := fs.String("root", "../..", "repository root (holds go.work)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: release [-root dir] proxy DIR | gowork-off | tidy [-check] [DIR...] | tag VERSION")
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	r, err := loadRepo(abs)
	if err != nil {
		return err
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	switch cmd {
	case "proxy":
		if len(rest) != 1 {
			return errors.New("usage: release proxy DIR")
		}
		return writeProxy(r, rest[0], TestVersion)
	case "gowork-off":
		return withOffline(r, func(o *offline) error {
			if err := o.prefetch(); err != nil {
				return err
			}
			return o.vetAll(func(s string) { fmt.Println(s) })
		})
	case "tidy":
		tfs := flag.NewFlagSet("tidy", flag.ContinueOnError)
		check := tfs.Bool("check", false, "report modules tidy would change instead of writing them")
		if err := tfs.Parse(rest); err != nil {
			return err
		}
		return withOffline(r, func(o *offline) error { return tidyAll(o, append(r.dirs(), tfs.Args()...), *check) })
	case "tag":
		if len(rest) != 1 {
			return errors.New("usage: release tag VERSION")
		}
		tags, err := release(r, rest[0], time.Now())
		if err != nil {
			return err
		}
		fmt.Printf("tagged %v\npush with: git push origin HEAD", tags)
		for _, t := range tags {
			fmt.Printf(" %s", t)
		}
		fmt.Println()
		return nil
	}
	return fmt.Errorf("release: unknown command %q", cmd)
}

func (r *repo) dirs() []string {
	var ds []string
	for _, m := range r.Modules {
		ds = append(ds, m.Dir)
	}
	return ds
}

func withOffline(r *repo, f func(*offline) error) error {
	tmp, err := os.MkdirTemp("", "lanework-offline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	o, err := newOffline(r, tmp)
	if err != nil {
		return err
	}
	return f(o)
}

func tidyAll(o *offline, dirs []string, check bool) error {
	var untidy []string
	for _, d := range dirs {
		gomod, gosum, err := o.tidy(d)
		if err != nil {
			return err
		}
		modPath, sumPath := filepath.Join(o.repo.Root, d, "go.mod"), filepath.Join(o.repo.Root, d, "go.sum")
		oldMod, err := os.ReadFile(modPath)
		if err != nil {
			return err
		}
		oldSum, err := os.ReadFile(sumPath)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if bytes.Equal(oldMod, gomod) && bytes.Equal(oldSum, gosum) {
			continue
		}
		if check {
			untidy = append(untidy, d)
			continue
		}
		if err := os.WriteFile(modPath, gomod, 0o644); err != nil {
			return err
		}
		if len(gosum) > 0 || len(oldSum) > 0 {
			if err := os.WriteFile(sumPath, gosum, 0o644); err != nil {
				return err
			}
		}
		fmt.Println("tidied", d)
	}
	if len(untidy) > 0 {
		return fmt.Errorf("go mod tidy changes %v (run make tidy)", untidy)
	}
	return nil
}
