package stack

import (
	"encoding/json"
	"fmt"
	"net/http"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/load"
)

// WSCheck asks the pod's entry point for a WebSocket Upgrade at path
// (with its query, if any) once, from the client: nil when it answers
// 101 Switching Protocols, else an error that names what it answered. A
// stack's WebSocket check runs it before any step, so that a feed path
// that does not take WebSockets (a 200, a 404, a front door that drops
// the Upgrade) is one clear error, not steps of failed consumers.
func (p *Pod) WSCheck(path string) error {
	u := load.WSURL(p.URL(""), path)
	args := []string{image.AgentPath, "get", "-ws", "-timeout", "5s", "-status", "101"}
	if ca := p.CAPEM(); ca != nil {
		args = append(args, "-ca", string(ca))
	}
	out, err := p.Exec(p.Client, append(args, u)...)
	if err == nil {
		return nil
	}
	var res struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(out, &res) != nil || res.Status == 0 {
		if res.Error != "" {
			return fmt.Errorf("the WebSocket Upgrade at %s got no answer: %s", u, res.Error)
		}
		return fmt.Errorf("the WebSocket Upgrade at %s got no answer: %w", u, err)
	}
	return fmt.Errorf("%s answered the WebSocket Upgrade with %d %s, not 101 Switching Protocols: the path does not take WebSockets there",
		u, res.Status, http.StatusText(res.Status))
}
