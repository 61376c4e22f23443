package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// pathPrefix is the common prefix of every lanework module path: a
// requirement under it is a sibling, resolved from go.work in development and
// from tags (or the worktree proxy) everywhere else.
const pathPrefix = "github.com/lanework/lanework/"

// A modDir is one directory of the workspace with its parsed go.mod.
type modDir struct {
	Dir  string // relative to the repository root, slash-separated
	Path string
	File *modfile.File
	Deps []string // module paths of the siblings it requires
}

// A repo is the repository root with its workspace.
type repo struct {
	Root    string
	Work    *modfile.WorkFile
	Modules []*modDir // in dependency order: every module after what it requires
	Version string    // the sibling version go.mod files require (go.work's replaces)
}

func isSibling(path string) bool { return strings.HasPrefix(path, pathPrefix) }

// loadRepo reads go.work and the go.mod of every module it uses.
func loadRepo(root string) (*repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	workPath := filepath.Join(root, "go.work")
	data, err := os.ReadFile(workPath)
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork(workPath, data, nil)
	if err != nil {
		return nil, err
	}
	r := &repo{Root: root, Work: wf}
	for _, u := range wf.Use {
		dir := filepath.ToSlash(filepath.Clean(u.Path))
		p := filepath.Join(root, dir, "go.mod")
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(p, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil || !isSibling(f.Module.Mod.Path) {
			return nil, fmt.Errorf("%s: module path must start with %s", p, pathPrefix)
		}
		if len(f.Replace) > 0 {
			return nil, fmt.Errorf("%s: has replace lines; go.work is what points development at local copies", p)
		}
		m := &modDir{Dir: dir, Path: f.Module.Mod.Path, File: f}
		for _, req := range f.Require {
			if isSibling(req.Mod.Path) {
				m.Deps = append(m.Deps, req.Mod.Path)
			}
		}
		r.Modules = append(r.Modules, m)
	}
	if r.Modules, err = dependencyOrder(r.Modules); err != nil {
		return nil, err
	}
	for _, rep := range wf.Replace {
		if !isSibling(rep.Old.Path) {
			continue
		}
		if rep.Old.Version == "" {
			return nil, fmt.Errorf("go.work: replace of %s must name the version the modules require", rep.Old.Path)
		}
		if r.Version != "" && rep.Old.Version != r.Version {
			return nil, fmt.Errorf("go.work: replaces name both %s and %s; every sibling is at one version", r.Version, rep.Old.Version)
		}
		r.Version = rep.Old.Version
	}
	replaced := map[string]bool{}
	for _, rep := range wf.Replace {
		replaced[rep.Old.Path] = true
	}
	for _, m := range r.Modules {
		for _, req := range m.File.Require {
			if isSibling(req.Mod.Path) && !replaced[req.Mod.Path] {
				return nil, fmt.Errorf("%s/go.mod: requires %s, which go.work does not replace with its local copy", m.Dir, req.Mod.Path)
			}
			if isSibling(req.Mod.Path) && req.Mod.Version != r.Version {
				return nil, fmt.Errorf("%s/go.mod: requires %s@%s, go.work replaces version %q", m.Dir, req.Mod.Path, req.Mod.Version, r.Version)
			}
		}
	}
	return r, nil
}

// dependencyOrder sorts modules so that each comes after every sibling it
// requires, keeping go.work order among independent modules.
func dependencyOrder(mods []*modDir) ([]*modDir, error) {
	byPath := make(map[string]*modDir, len(mods))
	for _, m := range mods {
		byPath[m.Path] = m
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make(map[string]int, len(mods))
	var out []*modDir
	var visit func(m *modDir, stack []string) error
	visit = func(m *modDir, stack []string) error {
		switch state[m.Path] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("module requirement cycle: %s", strings.Join(append(stack, m.Path), " -> "))
		}
		state[m.Path] = visiting
		for _, d := range m.Deps {
			dm, ok := byPath[d]
			if !ok {
				return fmt.Errorf("%s requires %s, which go.work does not use", m.Path, d)
			}
			if err := visit(dm, append(stack, m.Path)); err != nil {
				return err
			}
		}
		state[m.Path] = done
		out = append(out, m)
		return nil
	}
	for _, m := range mods {
		if err := visit(m, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withSiblingsAt returns m's go.mod with every sibling requirement at version.
func withSiblingsAt(f *modfile.File, version string) ([]byte, error) {
	c, err := modfile.Parse("go.mod", mustFormat(f), nil)
	if err != nil {
		return nil, err
	}
	for _, req := range c.Require {
		if isSibling(req.Mod.Path) {
			if err := c.AddRequire(req.Mod.Path, version); err != nil {
				return nil, err
			}
		}
	}
	for _, rep := range slices.Clone(c.Replace) {
		if isSibling(rep.Old.Path) {
			if err := c.DropReplace(rep.Old.Path, rep.Old.Version); err != nil {
				return nil, err
			}
		}
	}
	c.Cleanup()
	return c.Format()
}

func mustFormat(f *modfile.File) []byte {
	b, err := f.Format()
	if err != nil {
		panic(err) // a parsed file always formats
	}
	return b
}

// withoutSiblingSums drops the go.sum lines of sibling modules. Committed
// go.sum files hold third-party hashes only: a sibling's hash depends on
// which tree it was zipped from, and consumers get real ones from the
// checksum database.
func withoutSiblingSums(sum []byte) []byte {
	var out []byte
	for line := range strings.Lines(string(sum)) {
		if !isSibling(line) {
			out = append(out, line...)
		}
	}
	return out
}

func checkVersion(v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "" {
		return fmt.Errorf("version %q: want a canonical semantic version such as v0.2.0", v)
	}
	if m := semver.Major(v); m != "v0" && m != "v1" {
		return fmt.Errorf("version %q: major %s needs a /%s module path suffix", v, m, m)
	}
	return nil
}
