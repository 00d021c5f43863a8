package load

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	abLine    = regexp.MustCompile(`^(Complete requests|Failed requests|Non-2xx responses|Time taken for tests|Requests per second):\s+([0-9.]+)`)
	abKinds   = regexp.MustCompile(`\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)`)
	abPercent = regexp.MustCompile(`^\s*(\d+)%\s+(\d+)`)
)

// ParseAB reads Apache Bench's report into a ClosedResult, so ab and our
// generator are compared field by field. ab leaves non-2xx answers out of
// "Failed requests"; here they count as failed, as in Closed. ab's
// percentiles are whole milliseconds.
func ParseAB(spec ClosedSpec, out string) (ClosedResult, error) {
	res := ClosedResult{Spec: spec, FailedBy: map[string]int{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := abLine.FindStringSubmatch(line); m != nil {
			seen[m[1]] = true
			v, _ := strconv.ParseFloat(m[2], 64)
			switch m[1] {
			case "Complete requests":
				res.Completed = int(v)
			case "Failed requests":
				res.Failed += int(v)
			case "Non-2xx responses":
				res.Failed += int(v)
				res.FailedBy[FailNon2xx] = int(v)
			case "Time taken for tests":
				res.Total = time.Duration(v * float64(time.Second))
			case "Requests per second":
				res.ReqPerS = v
			}
			continue
		}
		if m := abKinds.FindStringSubmatch(line); m != nil {
			for i, k := range []string{FailConnect, FailReceive, FailLength, "exception"} {
				if n, _ := strconv.Atoi(m[i+1]); n > 0 {
					res.FailedBy[k] = n
				}
			}
			continue
		}
		if m := abPercent.FindStringSubmatch(line); m != nil {
			ms, _ := strconv.Atoi(m[2])
			d := time.Duration(ms) * time.Millisecond
			switch m[1] {
			case "50":
				res.Latencies.P50 = d
			case "95":
				res.Latencies.P95 = d
			case "99":
				res.Latencies.P99 = d
			case "100":
				res.Latencies.Max = d
			}
		}
	}
	for _, k := range []string{"Complete requests", "Failed requests", "Time taken for tests", "Requests per second"} {
		if !seen[k] {
			return res, fmt.Errorf("load: ab output has no %q line:\n%s", k, out)
		}
	}
	res.Latencies.Count = res.Completed - res.Failed
	return res, nil
}
