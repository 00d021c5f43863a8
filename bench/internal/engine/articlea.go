package engine

import (
	"fmt"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
)

// ArticleA is article A's matrix: three paths by 0, 1 and 2 slow downloads
// of 16 MiB at 2 MiB/s with two Gunicorn sync workers, plus gthread 1x4
// direct with two downloads; stock TCP memory.
var ArticleA = func() []Condition {
	var cs []Condition
	for _, p := range []Path{Direct, NginxOff, NginxOn} {
		for dl := range 3 {
			cs = append(cs, articleA(fmt.Sprintf("%s-%ddl", p.ID, dl), podspec.GunicornSync(2), p, dl))
		}
	}
	return append(cs, articleA("gthread-2dl", podspec.GunicornGthread(1, 4), Direct, 2))
}()

func articleA(id string, s podspec.Server, p Path, downloads int) Condition {
	return Condition{ID: id, Server: s, Path: p, Downloads: downloads,
		BodyBytes: load.DefaultLargeSize, ReadRate: load.DefaultDownloadRate, TCP: Stock}
}
