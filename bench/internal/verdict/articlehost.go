package verdict

import (
	"slices"
)

// ArticleHost are the verdicts of article A's cells under the article-host
// TCP profile (stock TCP memory with an 8 MiB send-buffer ceiling),
// asserted in TestArticleA/claims/<id>@article-host: the article's table
// again (each verdict keeps its kind), but for workers-blocked-direct-2dl
// and pilot-nginx-off-write-held, and three lab findings: the two figures
// the profile was chosen for, and why the pilot is idle under it.
//
// workers-blocked-direct-2dl is left out on purpose: its 0.5 threshold
// is the stock write time (6.6 s) over the window (9.1 s); larger send
// buffers free the workers sooner (write 4.7 s, a share near 0.52), while
// /fast still stalls (direct-2dl-stalls@article-host).
var ArticleHost = slices.Concat(Under(slices.DeleteFunc(slices.Clone(ArticleA), func(v Verdict) bool {
	return v.ID == "workers-blocked-direct-2dl" || v.ID == "pilot-nginx-off-write-held"
}), "article-host"), []Verdict{
	{ID: "nginx-off-2dl-near-article@article-host", Kind: Lab, Unit: "ms",
		Check: Between("nginx-off-2dl@article-host", P95, 1071.47/2, 1071.47*2),
		Text:  "under article-host TCP memory, NGINX buffering off with two downloads lands within 2x of the article's 1,071 ms"},
	{ID: "pilot-nginx-off-idle@article-host", Kind: Lab, Unit: "ms",
		Check: Below("pilot-nginx-off@article-host", P95, 10),
		Text:  "under article-host TCP memory the pilot reproduces: buffering off keeps /fast fast with two 8 MiB downloads at 1 MiB/s (article: about 2 ms)"},
	{ID: "pilot-nginx-off-write-free@article-host", Kind: Lab, Unit: "s",
		Check: Below("pilot-nginx-off@article-host", WriteS, 0.25),
		Text:  "why: under article-host TCP memory the buffering-off path takes the pilot's 8 MiB at once, so no worker waits for its client"},
})
