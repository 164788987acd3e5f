package judge

import (
	"fmt"
	"os"
	"strings"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
)

// folderPrefix names a judge's temporary folders (its servers' files, a
// built program), in os.TempDir().
const folderPrefix = "walletlock-judge-"

// workFolder makes the run's temporary folder, with the owner record that
// lets a later judge remove it if this one is killed before its clean-up;
// release removes it.
func workFolder() (dir string, release func(), err error) {
	dir, err = launch.OwnedTemp(folderPrefix)
	if err != nil {
		return "", nil, fmt.Errorf("judge: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// removeLeftovers removes the folders of judges that were killed before
// their clean-up, and provably dead (their owner record names a process
// that is gone), and says so in one line; "" when there were none.
func removeLeftovers() string {
	var gone []string
	for _, d := range launch.DeadTemps(folderPrefix) {
		if os.RemoveAll(d) == nil {
			gone = append(gone, "folder "+d)
		}
	}
	if netns.CanPartition() == nil {
		nets, _ := netns.RemoveDead() // a dead drill's too: both are provably dead
		gone = append(gone, nets...)
	}
	if len(gone) == 0 {
		return ""
	}
	return "judge: removed what judges killed before their clean-up left: " + strings.Join(gone, ", ")
}
