package main

import (
	"archive/zip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRepo makes a git repository with modules a and b (b requires a) and a
// go.work that replaces a at the version b requires.
func fakeRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.work":        "go 1.26\n\nuse (\n\t./b\n\t./a\n)\n\nreplace " + pathPrefix + "a v0.1.0 => ./a\n",
		"a/go.mod":       "module " + pathPrefix + "a\n\ngo 1.26\n",
		"a/a.go":         "package a\n\nconst X = 1\n",
		"a/CHANGELOG.md": "# a\n\n## Unreleased\n\n- first\n",
		"b/go.mod":       "module " + pathPrefix + "b\n\ngo 1.26\n\nrequire " + pathPrefix + "a v0.1.0\n",
		"b/b.go":         "package b\n\nimport \"" + pathPrefix + "a\"\n\nconst Y = a.X\n",
		".gitignore":     "data/\n",
		"b/data/big":     "ignored by git, so never zipped\n",
	}
	for p, c := range files {
		write(t, filepath.Join(root, p), c)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"config", "user.email", "test@lanework.invalid"}, {"config", "user.name", "test"},
		{"add", "."}, {"commit", "-q", "-m", "start"},
	} {
		if _, err := git(root, args...); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestLoadRepoOrdersByDependency(t *testing.T) {
	r, err := loadRepo(fakeRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.dirs(), " "); got != "a b" {
		t.Errorf("order %q, want \"a b\" (go.work lists b first)", got)
	}
	if r.Version != "v0.1.0" {
		t.Errorf("version %q, want v0.1.0", r.Version)
	}
}

func TestDependencyCycle(t *testing.T) {
	_, err := dependencyOrder([]*modDir{
		{Path: pathPrefix + "a", Deps: []string{pathPrefix + "b"}},
		{Path: pathPrefix + "b", Deps: []string{pathPrefix + "a"}},
	})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("got %v, want a cycle error", err)
	}
}

func TestLoadRepoRefusesReplace(t *testing.T) {
	root := fakeRepo(t)
	write(t, filepath.Join(root, "b/go.mod"), "module "+pathPrefix+"b\n\ngo 1.26\n\nrequire "+pathPrefix+"a v0.1.0\n\nreplace "+pathPrefix+"a => ../a\n")
	if _, err := loadRepo(root); err == nil || !strings.Contains(err.Error(), "replace") {
		t.Errorf("got %v, want a refusal naming replace", err)
	}
}

func TestProxyZipsWorktreeWithSiblingsAtVersion(t *testing.T) {
	r, err := loadRepo(fakeRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeProxy(r, dir, TestVersion); err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(dir, "github.com/lanework/lanework/b/@v")
	mod, err := os.ReadFile(filepath.Join(vdir, TestVersion+".mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), pathPrefix+"a "+TestVersion) {
		t.Errorf(".mod does not require a at %s:\n%s", TestVersion, mod)
	}
	zr, err := zip.OpenReader(filepath.Join(vdir, TestVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if strings.HasSuffix(f.Name, "/go.mod") {
			rc, _ := f.Open()
			zmod, _ := io.ReadAll(rc)
			rc.Close()
			if string(zmod) != string(mod) {
				t.Errorf("zipped go.mod differs from .mod:\n%s\nvs\n%s", zmod, mod)
			}
		}
	}
	want := pathPrefix + "b@" + TestVersion + "/"
	if got := strings.Join(names, " "); got != want+"b.go "+want+"go.mod" && got != want+"go.mod "+want+"b.go" {
		t.Errorf("zip holds %v, want b.go and go.mod only (data/ is ignored by git)", names)
	}
}

func TestReleaseRefusesDirtyTree(t *testing.T) {
	root := fakeRepo(t)
	write(t, filepath.Join(root, "a/a.go"), "package a\n\nconst X = 2\n")
	r, err := loadRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := release(r, "v0.2.0", time.Now()); !errors.Is(err, errDirty) {
		t.Fatalf("got %v, want errDirty", err)
	}
	if tags, _ := git(root, "tag"); tags != "" {
		t.Errorf("tags %q after a refused release", tags)
	}
}

func TestRelease(t *testing.T) {
	root := fakeRepo(t)
	r, err := loadRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tags, err := release(r, "v0.2.0", day)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tags, " "); got != "a/v0.2.0 b/v0.2.0" {
		t.Errorf("tags %q, want dependency order a/v0.2.0 b/v0.2.0", got)
	}
	head, _ := git(root, "rev-parse", "HEAD")
	for _, tag := range tags {
		if at, err := git(root, "rev-parse", tag+"^{commit}"); err != nil || at != head {
			t.Errorf("%s at %q (%v), want the release commit %s", tag, at, err, head)
		}
	}
	if status, _ := git(root, "status", "--porcelain"); status != "" {
		t.Errorf("release left the tree dirty:\n%s", status)
	}
	bmod, _ := os.ReadFile(filepath.Join(root, "b/go.mod"))
	if !strings.Contains(string(bmod), pathPrefix+"a v0.2.0") {
		t.Errorf("b/go.mod after release:\n%s", bmod)
	}
	r2, err := loadRepo(root) // go.work's replaces moved with the requirements
	if err != nil {
		t.Fatal(err)
	}
	if r2.Version != "v0.2.0" {
		t.Errorf("go.work replaces %q after release, want v0.2.0", r2.Version)
	}
	if work, _ := os.ReadFile(filepath.Join(root, "go.work")); !strings.Contains(string(work), "\nreplace "+pathPrefix+"a v0.2.0 => ./a\n") {
		t.Errorf("go.work after release:\n%s", work)
	}
	cl, _ := os.ReadFile(filepath.Join(root, "a/CHANGELOG.md"))
	if !strings.Contains(string(cl), "\n## v0.2.0 (2026-12-02)\n") {
		t.Errorf("CHANGELOG not dated:\n%s", cl)
	}
	if _, err := release(r2, "v0.2.0", day); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second release of v0.2.0: %v, want a refusal", err)
	}
	if _, err := release(r2, "v0.1.5", day); err == nil {
		t.Error("release below the current version was accepted")
	}
	if _, err := release(r2, "0.3", day); err == nil {
		t.Error("a non-semver version was accepted")
	}
}
