package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// A job's checkpoints (package checkpoint) follow its files: its records
// stay while the job is open and, once it ended, until they are unchanged
// for Policy.JobFiles, as its transcript; an object stays while a record
// kept names it, then until Policy.JobFiles past its last link or reuse
// (its change time: an object linked to a file's inode keeps that file's
// modification time).

// checkpoints plans the removal of ws's ended jobs' old checkpoint
// records, then of the objects no record kept names. Should a record not
// be readable, no object of ws goes.
func (p *planner) checkpoints(ws string) error {
	prev := p.plan.Next
	if !p.visit(Cursor{Area: areaWorkspaces, Dir: ws, Step: stepCheckpoints}) {
		return nil
	}
	root := filepath.Join(p.in.State, workspacesDir, ws, checkpointsDir)
	jobs, err := dirNames(filepath.Join(root, "jobs"))
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, j := range jobs {
		p.plan.Examined++
		dir := filepath.Join(root, "jobs", j.Name())
		newest, size, sums, err := readRecords(dir)
		if err != nil {
			return nil // fail closed: keep every object of ws
		}
		if !p.open[j.Name()] && p.old(newest, p.in.Policy.JobFiles) {
			p.add(Entry{Kind: Checkpoints, Path: dir, Workspace: ws, Job: j.Name(), Bytes: size, ModTime: newest,
				Why: "job ended, its checkpoints unchanged for " + age(p.in.Now.Sub(newest))})
			continue
		}
		for s := range sums {
			named[s] = true
		}
	}
	return p.checkpointObjects(ws, filepath.Join(root, "objects"), named, prev)
}

// checkpointObjects plans the removal of the objects in dir no kept
// record names, past Policy.JobFiles since their last change.
func (p *planner) checkpointObjects(ws, dir string, named map[string]bool, prev Cursor) error {
	ents, err := dirNames(dir)
	if err != nil {
		return err
	}
	p.sweep(sweep{kind: Checkpoints, ws: ws, dir: dir, ents: ents, named: named, prev: prev,
		why: "no checkpoint kept names it", state: objectState})
	return nil
}

// objectState is an object's change time, and the bytes removing it
// frees: none while a workspace file shares its inode.
func objectState(fi fs.FileInfo) (time.Time, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime(), fi.Size()
	}
	n := fi.Size()
	if st.Nlink > 1 {
		n = 0
	}
	if c := hostfs.StatChangeTime(st); c != 0 {
		return time.Unix(0, c), n
	}
	return fi.ModTime(), n
}

// readRecords reads a job's checkpoint records (those a rewind set aside
// too): their newest change, their size, and the objects they name.
func readRecords(dir string) (time.Time, int64, map[string]bool, error) {
	var newest time.Time
	var size int64
	sums := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		size += fi.Size()
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r checkpoint.Record
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("retention: %s: %w", path, err)
		}
		for _, c := range r.Changes {
			sums[c.Before.Sum], sums[c.After.Sum] = true, true
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return newest, size, sums, err
}

// removeCheckpoints removes a job's records (unchanged since the plan)
// or an object (not linked or reused since).
func removeCheckpoints(e Entry) (bool, error) {
	fi, err := os.Lstat(e.Path)
	if err != nil {
		return false, nil
	}
	if fi.IsDir() {
		newest, _, _, err := readRecords(e.Path)
		if err != nil || !newest.Equal(e.ModTime) {
			return false, nil
		}
		if err := os.RemoveAll(e.Path); err != nil {
			return false, fmt.Errorf("retention: removing %s: %w", e.Path, err)
		}
		return true, nil
	}
	if changed, _ := objectState(fi); !fi.Mode().IsRegular() || !changed.Equal(e.ModTime) {
		return false, nil
	}
	if err := os.Remove(e.Path); err != nil {
		return false, fmt.Errorf("retention: removing %s: %w", e.Path, err)
	}
	return true, nil
}
