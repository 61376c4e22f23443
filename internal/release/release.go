package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// errDirty refuses a release from a tree whose state no commit names.
var errDirty = errors.New("release: the working tree has uncommitted changes; commit or stash them first")

// release makes one commit that moves every sibling requirement (and
// go.work's replaces) to version and dates the "Unreleased" section of each
// module's CHANGELOG.md, then tags every module at that commit in dependency
// order (ringbuf/v0.2.0 before frontier/v0.2.0, ...). It pushes nothing and
// returns the tags it made.
func release(r *repo, version string, now time.Time) ([]string, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	if r.Version != "" && semver.Compare(version, r.Version) < 0 {
		return nil, fmt.Errorf("release: %s is below the current %s", version, r.Version)
	}
	status, err := git(r.Root, "status", "--porcelain")
	if err != nil {
		return nil, err
	}
	if status != "" {
		return nil, fmt.Errorf("%w:\n%s", errDirty, status)
	}
	var tags []string
	for _, m := range r.Modules {
		tag := m.Dir + "/" + version
		if out, err := git(r.Root, "tag", "--list", tag); err != nil {
			return nil, err
		} else if out != "" {
			return nil, fmt.Errorf("release: tag %s already exists", tag)
		}
		tags = append(tags, tag)
	}

	for _, m := range r.Modules {
		gomod, err := withSiblingsAt(m.File, version)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(r.Root, m.Dir, "go.mod"), gomod, 0o644); err != nil {
			return nil, err
		}
		if err := dateChangelog(filepath.Join(r.Root, m.Dir, "CHANGELOG.md"), version, now); err != nil {
			return nil, err
		}
	}
	if err := setWorkReplaces(r, version); err != nil {
		return nil, err
	}
	if _, err := git(r.Root, "add", "-u"); err != nil {
		return nil, err
	}
	if _, err := git(r.Root, "commit", "--allow-empty", "-q", "-m", "release "+version+"\n\nEvery module requires its siblings at "+version+".\n"); err != nil {
		return nil, err
	}
	for _, tag := range tags {
		if _, err := git(r.Root, "tag", "-a", "-m", tag, tag); err != nil {
			return nil, err
		}
	}
	return tags, nil
}

// setWorkReplaces moves go.work's sibling replaces to version, editing the
// version in place so the file keeps its layout and comments.
func setWorkReplaces(r *repo, version string) error {
	path := filepath.Join(r.Root, "go.work")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^(\s*(?:replace\s+)?` + regexp.QuoteMeta(pathPrefix) + `\S+\s+)` +
		regexp.QuoteMeta(r.Version) + `(\s+=>)`)
	data = re.ReplaceAll(data, []byte("${1}"+version+"${2}"))
	if _, err := modfile.ParseWork(path, data, nil); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// dateChangelog turns the "## Unreleased" heading into "## version (date)".
func dateChangelog(path, version string, now time.Time) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	heading := []byte("\n## Unreleased\n")
	if !bytes.Contains(data, heading) {
		return nil
	}
	data = bytes.Replace(data, heading, []byte("\n## "+version+" ("+now.UTC().Format(time.DateOnly)+")\n"), 1)
	return os.WriteFile(path, data, 0o644)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
