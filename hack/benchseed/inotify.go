package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// inotifyInstancesPath is Linux's bound of inotify instances per user. Every kube-apiserver
// watches its certificate files with some, and so do both sides' webhook servers
// (controller-runtime's certwatcher); at the default of 128 a run of 50 shoots ran out, and our
// webhook server's start failed with "too many open files".
const inotifyInstancesPath = "/proc/sys/fs/inotify/max_user_instances"

// inotifyInstancesNeeded is a generous bound for n shoots: a few for each kube-apiserver (the
// shoots' and the seed's), one for each of Gardener's resource managers, and the rest of the
// machine's.
func inotifyInstancesNeeded(n int) int { return 8*(n+1) + 64 }

// checkInotifyInstances fails before anything starts when the bound (read from path) is too low
// for n shoots, naming the setting to raise: a benchmark does not change the machine's settings
// itself.
func checkInotifyInstances(path string, n int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil // no such bound to check here
	}
	have, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if need := inotifyInstancesNeeded(n); have < need {
		return fmt.Errorf("%d shoots need about %d inotify instances, and fs.inotify.max_user_instances is %d: raise it first (sysctl -w fs.inotify.max_user_instances=%d)", n, need, have, need)
	}
	return nil
}
