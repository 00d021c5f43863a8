package readme

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// A Doc is one generated part of the lab's documents: the document, its
// section (empty when the part is the whole file), the report file it is
// rendered from, and how. Paths are relative to the module root.
type Doc struct {
	Path, Section, From string
	Render              func(root, from string) (string, error)
}

// Docs are the parts make docs writes from committed report files, and
// that unit tests hold the documents to.
var Docs = []Doc{
	{Path: "bench/README.md", Section: "protection", From: "fixtures/report/" + MatrixFile, Render: protectionDoc},
	{Path: "reports/matrix.svg", From: "fixtures/report/" + MatrixFile, Render: pictureDoc},
	{Path: "fixtures/stacks/README.md", Section: "check-transcript", From: TranscriptFrom, Render: transcriptDoc},
	{Path: "README.md", Section: "check-verdict", From: TranscriptFrom, Render: verdictDoc},
	{Path: "bench/README.md", Section: "front-doors", From: FrontDoorsFrom, Render: frontDoorDoc},
}

// PackagesDoc is the stack-file reference's list of the Python packages an
// app directory can import: rendered from the image's own package list as
// a series records it (environment.json), so that its check needs the
// image (bench's TestSmokeVersions).
var PackagesDoc = Doc{Path: "fixtures/stacks/README.md", Section: "image-packages", From: "environment.json", Render: packagesDoc}

// TranscriptFrom is the stacks.json of a real make check of
// fixtures/stacks/sync.yaml, which the transcript shows.
const (
	TranscriptFrom  = "fixtures/stacks/transcript/stacks.json"
	TranscriptStack = "fixtures/stacks/sync.yaml"
)

// Write renders d from the file from (relative to root, or absolute) and
// writes it into root's document, through a file renamed over it.
func (d Doc) Write(root, from string) error {
	body, err := d.Render(root, from)
	if err != nil {
		return err
	}
	path := filepath.Join(root, d.Path)
	out := body
	if d.Section != "" {
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if out, err = Splice(string(doc), d.Section, body); err != nil {
			return fmt.Errorf("%s: %w", d.Path, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Committed is what root's document holds of d now.
func (d Doc) Committed(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, d.Path))
	if err != nil || d.Section == "" {
		return string(b), err
	}
	return Section(string(b), d.Section)
}

func under(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

var (
	protectionDoc = matrixDoc(Protection)
	pictureDoc    = matrixDoc(Picture)
)

// matrixDoc renders a matrix.json's part of the documents by render.
func matrixDoc(render func(*report.Matrix) report.Reporter) func(root, from string) (string, error) {
	return func(root, from string) (string, error) {
		m, err := Load(under(root, from))
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		err = render(m)(&b)
		return b.String(), err
	}
}

// transcriptDoc is what make check of TranscriptStack printed at its end,
// from its stacks.json: the check's summary as labcheck prints it, then
// what go run and make add, with the Makefile's own line.
func transcriptDoc(root, from string) (string, error) {
	stacks, err := transcriptStacks(root, from)
	if err != nil {
		return "", err
	}
	line, err := recipeLine(filepath.Join(root, "Makefile"), "./bench/cmd/labcheck")
	if err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "```\n$ make check STACK=%s\n...\n=== RUN   TestStack\n...\nreports/out/check/report.html\n\n", TranscriptStack)
	if err := report.CheckSummary(stacks, stacks[0].Name)(&out); err != nil {
		return "", err
	}
	code, _ := report.CheckExit(stacks, stacks[0].Name)
	if code != 0 {
		fmt.Fprintf(&out, "exit status %d\nmake: *** [Makefile:%d: check] Error 1\n", code, line)
	}
	out.WriteString("```\n")
	return out.String(), nil
}

// verdictDoc is the verdict the transcript ends with, as labcheck prints
// it: the landing page's quick start shows it.
func verdictDoc(root, from string) (string, error) {
	stacks, err := transcriptStacks(root, from)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString("```\n")
	if err := report.CheckSummary(stacks, stacks[0].Name)(&out); err != nil {
		return "", err
	}
	out.WriteString("```\n")
	return out.String(), nil
}

// transcriptStacks is the transcript's stacks.json: one check.
func transcriptStacks(root, from string) ([]report.Stack, error) {
	b, err := os.ReadFile(under(root, from))
	if err != nil {
		return nil, err
	}
	var stacks []report.Stack
	if err := json.Unmarshal(b, &stacks); err != nil {
		return nil, fmt.Errorf("readme: %s: %w", from, err)
	}
	if len(stacks) != 1 {
		return nil, fmt.Errorf("readme: %s holds %d stack checks, want the one of %s", from, len(stacks), TranscriptStack)
	}
	return stacks, nil
}

// recipeLine is the number of the Makefile's first line holding s.
func recipeLine(makefile, s string) (int, error) {
	f, err := os.Open(makefile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), s) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("readme: no line of %s holds %q", makefile, s)
}

// packagesDoc lists the image's Python packages from a series'
// environment.json (from: its path, or its report directory).
func packagesDoc(root, from string) (string, error) {
	p := under(root, from)
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "environment.json")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("readme: the image's packages come from a series' environment.json (make test writes one): %w", err)
	}
	var env report.Environment
	if err := json.Unmarshal(b, &env); err != nil {
		return "", fmt.Errorf("readme: %s: %w", p, err)
	}
	return Packages(env.Versions.Packages)
}

// Packages is the table of the Python packages of an image's package list
// (Debian package name to version): python3 and every python3-* package.
func Packages(pkgs map[string]string) (string, error) {
	var names []string
	for n := range pkgs {
		if n == "python3" || strings.HasPrefix(n, "python3-") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("readme: the image's package list has no python3 package")
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d Debian packages of Python, from the image's package list (`/etc/lab-image-packages`):\n\n", len(names))
	b.WriteString("| Debian package | version |\n|---|---|\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, pkgs[n])
	}
	return b.String(), nil
}
