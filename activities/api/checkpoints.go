package api

import "path/filepath"

// CheckpointDir is where the checkpoints of a job whose files are files
// are kept: beside its transcript's directory in the workspace's state
// directory (<ws-state>/checkpoints), shared by the workspace's jobs so
// that a content two turns or two jobs saw is stored once. It is "" for a
// job whose files are in the workspace (files empty): custos never
// writes a checkpoint there.
func CheckpointDir(files JobFiles) string {
	if files.Transcript == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(files.Transcript)), "checkpoints")
}
