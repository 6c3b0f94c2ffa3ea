package report

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
)

// sums are the SHA-256 of the files a report wrote, by base name, kept in
// the run directory (results.Run.ReportSums) so that the next report
// replaces its own files and never a reader's edits.
type sums map[string][sha256.Size]byte

// readSums reads the run directory's sums; none when there is no file.
func readSums(dir string) (sums, error) {
	path := results.Run(dir).ReportSums()
	s := sums{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		b, err := hex.DecodeString(sum)
		if !ok || err != nil || len(b) != sha256.Size || strings.ContainsRune(name, '/') {
			return nil, fmt.Errorf("%s:%d: want \"SHA256  NAME\" as sha256sum writes it: remove the file and pass --force to write the report anew", path, n)
		}
		s[name] = [sha256.Size]byte(b)
	}
	return s, nil
}

// unchanged says why path may not be replaced: it is a symbolic link, or
// it differs from what the last report wrote (edited since, or never the
// report's). A missing file may be written.
func (s sums) unchanged(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: it is not followed; pass --force to replace the link (not its target)", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a file: move it away", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	want, ok := s[name]
	switch {
	case !ok:
		return fmt.Errorf("%s exists but %s does not list it: not written by a report (or by one before the list was kept); pass --force to replace it", path, filepath.Base(results.Run(filepath.Dir(path)).ReportSums()))
	case sha256.Sum256(data) != want:
		return fmt.Errorf("%s was edited since the report wrote it: save your edits under another name, or pass --force to replace it", path)
	}
	return nil
}

// write stores the sums in the run directory, one line a file in name order.
func (s sums) write(dir string) error {
	var b bytes.Buffer
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sum := s[n]
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return atomicfile.Write(results.Run(dir).ReportSums(), b.Bytes())
}

// Owned are the files a report wrote in a directory (its report.sha256):
// a run directory's readme.md and charts, or a sweep directory's. A file
// edited since, or never written by a report, is replaced only by force.
type Owned struct {
	dir   string
	force bool
	sums  sums
	wrote bool
}

// OpenOwned reads dir's report.sha256 (none yet: an empty list).
func OpenOwned(dir string, force bool) (*Owned, error) {
	s, err := readSums(dir)
	if err != nil {
		return nil, err
	}
	return &Owned{dir: dir, force: force, sums: s}, nil
}

// Check says why a file of dir named by base name may not be replaced,
// nil when it may (absent, unchanged since a report wrote it, or force).
func (o *Owned) Check(names ...string) error {
	if o.force {
		return nil
	}
	var errs []error
	for _, n := range names {
		if err := o.sums.unchanged(filepath.Join(o.dir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckAll checks readme.md and every file report.sha256 lists.
func (o *Owned) CheckAll() error {
	readme := filepath.Base(results.Run(o.dir).Readme())
	names := []string{readme}
	for n := range o.sums {
		if n != readme {
			names = append(names, n)
		}
	}
	slices.Sort(names[1:])
	return o.Check(names...)
}

// Write writes data as dir's file name, after Check, and records it.
func (o *Owned) Write(name string, data []byte) error {
	if err := o.Check(name); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(o.dir, name), data); err != nil {
		return err
	}
	o.sums[name] = sha256.Sum256(data)
	o.wrote = true
	return nil
}

// Save writes report.sha256 when a file was written.
func (o *Owned) Save() error {
	if !o.wrote {
		return nil
	}
	return o.sums.write(o.dir)
}
