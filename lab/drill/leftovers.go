//go:build unix

package drill

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
)

// tempPattern names a drill's temporary folder, in os.TempDir().
const tempPattern = "walletlock-drill-"

// MkdirTemp makes the run's folder for its servers' files, with the
// owner record that lets a later drill remove it once this process is
// gone (RemoveLeftovers). The caller removes it when the run ends.
func MkdirTemp() (string, error) {
	dir, err := launch.OwnedTemp(tempPattern)
	if err != nil {
		return "", fmt.Errorf("drill: %w", err)
	}
	return dir, nil
}

// RemoveLeftovers removes what drills killed before their clean-up left
// and whose owner is provably dead: their temporary folders (in this
// process's TMPDIR) and, where this process can make network namespaces
// (netns.CanPartition), their networks. It returns one line that says what it
// removed, "" when nothing; what it could not remove it names in err.
// Nothing of a live drill is touched.
func RemoveLeftovers() (string, error) {
	var removed []string
	var errs []error
	for _, p := range launch.DeadTemps(tempPattern) {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("drill: remove %s: %w", p, err))
			continue
		}
		removed = append(removed, "folder "+p)
	}
	if netns.CanPartition() == nil {
		nets, err := netns.RemoveDead()
		removed = append(removed, nets...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(removed) == 0 {
		return "", errors.Join(errs...)
	}
	return "removed what drills killed before their clean-up left: " + strings.Join(removed, ", "), errors.Join(errs...)
}
