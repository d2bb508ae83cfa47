//go:build !linux

package sandbox

import (
	"fmt"
	"os"
)

// helperPid1 exists only where bubblewrap does.
func helperPid1([]string) int {
	fmt.Fprintln(os.Stderr, "custos-sandbox: "+pid1Marker+" runs only on Linux")
	return 125
}
