package cluster

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
)

// KubeletChains are the iptables chains a kubelet makes at its start, and
// keeps making while it runs (pkg/kubelet/kubelet_network_linux.go):
// the hint for other components, its canary, and the firewall chain that
// INPUT and OUTPUT jump to. Stop removes those it made.
var KubeletChains = []string{"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY", "KUBE-FIREWALL"}

// iptablesTables are the tables the kubelet writes to.
var iptablesTables = []string{"mangle", "nat", "filter"}

// iptablesRun runs an iptables command (iptables or ip6tables) with args.
type iptablesRun func(cmd string, args ...string) ([]byte, error)

func runIptables(cmd string, args ...string) ([]byte, error) {
	if _, err := exec.LookPath(cmd); err != nil {
		return nil, nil // no iptables: the kubelet made nothing either
	}
	return output(exec.Command(cmd, append([]string{"-w"}, args...)...), nil, cmd, args)
}

// kubeletChains lists the KubeletChains that exist, as
// "iptables/filter/KUBE-FIREWALL".
func kubeletChains(run iptablesRun) ([]string, error) {
	var out []string
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			b, err := run(cmd, "-t", table, "-S")
			if err != nil && strings.Contains(err.Error(), "does not exist") {
				continue // a table this kernel lacks: the kubelet made nothing there either
			}
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if name, ok := strings.CutPrefix(line, "-N "); ok && slices.Contains(KubeletChains, name) {
					out = append(out, cmd+"/"+table+"/"+name)
				}
			}
		}
	}
	return out, nil
}

// removeKubeletChains removes the KubeletChains that exist and are not in
// keep (those that were there before the cluster's start): first every
// rule that jumps to one, then the chain itself.
func removeKubeletChains(run iptablesRun, keep []string) error {
	have, err := kubeletChains(run)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range have {
		if slices.Contains(keep, id) {
			continue
		}
		parts := strings.SplitN(id, "/", 3)
		cmd, table, chain := parts[0], parts[1], parts[2]
		b, err := run(cmd, "-t", table, "-S")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			rule, ok := strings.CutPrefix(line, "-A ")
			args := splitRule(rule)
			if !ok || len(args) == 0 || args[0] == chain || !jumpsTo(args, chain) {
				continue
			}
			if _, err := run(cmd, append([]string{"-t", table, "-D"}, args...)...); err != nil {
				errs = append(errs, err)
			}
		}
		for _, op := range []string{"-F", "-X"} {
			if _, err := run(cmd, "-t", table, op, chain); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func jumpsTo(args []string, chain string) bool {
	for i := 0; i+1 < len(args); i++ {
		if (args[i] == "-j" || args[i] == "-g") && args[i+1] == chain {
			return true
		}
	}
	return false
}

// splitRule splits a rule as iptables -S prints it: words, and quoted
// strings (a comment) as one word without their quotes.
func splitRule(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
