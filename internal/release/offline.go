package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// TestVersion is the version the worktree proxy serves. It is a prerelease of
// v0.0.0, below every real tag, and never tagged.
const TestVersion = "v0.0.0-worktree"

// An offline is a worktree proxy plus the environment that builds against it
// with the workspace off, reaching third-party modules only through the
// module cache's download directory (itself a valid proxy layout).
//
// Its go commands use a module cache of their own: the go command never
// re-reads a version it has extracted, so serving a changing tree under one
// version through the shared cache would build a stale copy. -trimpath keys
// compiled packages by module version instead of by directory, so the build
// cache still serves them from one run to the next.
type offline struct {
	repo        *repo
	proxy       string // directory
	tmp         string
	sharedCache string // the user's GOMODCACHE
}

func newOffline(r *repo, tmp string) (*offline, error) {
	o := &offline{repo: r, proxy: filepath.Join(tmp, "proxy"), tmp: tmp}
	var err error
	if o.sharedCache, err = goEnv("GOMODCACHE"); err != nil {
		return nil, err
	}
	if err := writeProxy(r, o.proxy, TestVersion); err != nil {
		return nil, err
	}
	return o, nil
}

// env is the environment of a GOWORK=off go command. Without network only
// file proxies are consulted; with it, third-party modules missing from the
// shared cache come from the usual GOPROXY.
func (o *offline) env(network bool) ([]string, error) {
	proxy := "file://" + filepath.ToSlash(o.proxy) + ",file://" + filepath.ToSlash(filepath.Join(o.sharedCache, "cache", "download"))
	if network {
		up, err := goEnv("GOPROXY")
		if err != nil {
			return nil, err
		}
		proxy += "," + up
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOPROXY="+proxy,
		"GONOSUMDB="+strings.TrimSuffix(pathPrefix, "/"),
		"GOMODCACHE="+filepath.Join(o.tmp, "modcache"),
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOTOOLCHAIN=local",
	), nil
}

// modfile writes dir's go.mod with siblings at TestVersion, and its go.sum,
// into a fresh directory and returns the go.mod path for -modfile, so the
// committed files are never touched.
func (o *offline) modfile(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(o.repo.Root, dir, "go.mod"))
	if err != nil {
		return "", err
	}
	f, err := modfile.Parse(filepath.Join(dir, "go.mod"), data, nil)
	if err != nil {
		return "", err
	}
	gomod, err := withSiblingsAt(f, TestVersion)
	if err != nil {
		return "", err
	}
	mdir, err := os.MkdirTemp(o.tmp, "modfile-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mdir, "go.mod"), gomod, 0o644); err != nil {
		return "", err
	}
	sum, err := os.ReadFile(filepath.Join(o.repo.Root, dir, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mdir, "go.sum"), sum, 0o644); err != nil {
		return "", err
	}
	return filepath.Join(mdir, "go.mod"), nil
}

// run runs the go command in the module directory dir.
func (o *offline) run(network bool, dir string, args ...string) error {
	env, err := o.env(network)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(o.repo.Root, dir)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: go %s: %w\n%s", dir, strings.Join(args, " "), err, out.String())
	}
	return nil
}

// prefetch puts every third-party module the workspace needs into the
// shared module cache (a no-op when it is warm), so later steps can stay on
// file proxies. It runs in workspace mode, where siblings are local, and
// leaves go.work.sum as it was (go mod download records hashes there).
func (o *offline) prefetch() (err error) {
	sumPath := filepath.Join(o.repo.Root, "go.work.sum")
	sum, rerr := os.ReadFile(sumPath)
	if rerr == nil {
		defer func() {
			if now, _ := os.ReadFile(sumPath); !bytes.Equal(now, sum) {
				err = errors.Join(err, os.WriteFile(sumPath, sum, 0o644))
			}
		}()
	}
	cmd := exec.Command("go", "mod", "download")
	cmd.Dir = o.repo.Root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(o.repo.Root, "go.work"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go mod download: %w\n%s", err, out.String())
	}
	return nil
}

// vetAll builds and vets every module on its own against the proxy.
func (o *offline) vetAll(log func(string)) error {
	for _, m := range o.repo.Modules {
		log("== GOWORK=off " + m.Dir)
		mf, err := o.modfile(m.Dir)
		if err != nil {
			return err
		}
		if err := o.run(false, m.Dir, "build", "-modfile="+mf, "./..."); err != nil {
			return err
		}
		if err := o.run(false, m.Dir, "vet", "-modfile="+mf, "./..."); err != nil {
			return err
		}
	}
	return nil
}

// tidy runs go mod tidy on a copy of dir's go.mod and go.sum and returns what
// the committed files should be: sibling requirements back at the repo's
// version, sibling hashes dropped.
func (o *offline) tidy(dir string) (gomod, gosum []byte, err error) {
	mf, err := o.modfile(dir)
	if err != nil {
		return nil, nil, err
	}
	// Tidy reads the zips of the tests of dependencies, which no build needs:
	// it may fetch third-party modules the cache lacks.
	if err := o.run(true, dir, "mod", "tidy", "-modfile="+mf); err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(mf)
	if err != nil {
		return nil, nil, err
	}
	f, err := modfile.Parse(mf, data, nil)
	if err != nil {
		return nil, nil, err
	}
	if gomod, err = withSiblingsAt(f, o.repo.Version); err != nil {
		return nil, nil, err
	}
	sum, err := os.ReadFile(strings.TrimSuffix(mf, ".mod") + ".sum")
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	return gomod, withoutSiblingSums(sum), nil
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}
