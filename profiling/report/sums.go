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
