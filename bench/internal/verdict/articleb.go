package verdict

// ArticleBServers are article B's four configurations; the lab adds
// uwsgi-gevent and gunicorn-gthread-4.
var ArticleBServers = []string{"gunicorn-sync", "gunicorn-gevent", "uwsgi-sync", "uwsgi-async-ugreen"}

// AllBServers are every server article B's series runs.
var AllBServers = append(append([]string{}, ArticleBServers...), "uwsgi-gevent", "gunicorn-gthread-4")

func cells(servers []string, blocks ...int) []string {
	var out []string
	for _, s := range servers {
		for _, b := range blocks {
			out = append(out, Cell(s, b))
		}
	}
	return out
}

// ArticleB are article B's verdicts, asserted in TestArticleB/claims/<id>.
// Margins: reports/measurements.md.
var ArticleB = []Verdict{
	{ID: "b/no-blocking-all-alike", Kind: Article, Unit: "x", Check: SpreadAtMost(cells(ArticleBServers, 0), 2),
		Text: "without blocking, the four article configurations are within 2x of each other (the largest, over every two, of the median ratio of their rates run by run, round by round)"},
	{ID: "b/gunicorn-sync-collapses", Kind: Article, Unit: "req/s", Check: RateBetween(Cell("gunicorn-sync", 100), 8, 10.5),
		Text: "with 0.1 s blocking, one Gunicorn sync worker serves about 1 / 0.1 s (article: under 10 req/s)"},
	{ID: "b/uwsgi-sync-collapses", Kind: Article, Unit: "req/s", Check: RateBetween(Cell("uwsgi-sync", 100), 8, 10.5),
		Text: "with 0.1 s blocking, one uWSGI sync process serves about 1 / 0.1 s (article: 9.3 req/s)"},
	{ID: "b/gevent-keeps-rate", Kind: Article, Unit: "share", Check: KeepsRate(Cell("gunicorn-gevent", 100), Cell("gunicorn-gevent", 0), 0.5),
		Text: "with 0.1 s blocking, Gunicorn gevent keeps its rate (article: about 300 req/s with and without): at least half of min(its non-blocking rate, c / 0.1 s)"},
	{ID: "b/uwsgi-gevent-keeps-rate", Kind: Article, Unit: "share", Check: KeepsRate(Cell("uwsgi-gevent", 100), Cell("uwsgi-gevent", 0), 0.5),
		Text: "with 0.1 s blocking, uWSGI with its gevent loop keeps its rate: at least half of min(its non-blocking rate, c / 0.1 s)"},
	{ID: "b/ugreen-does-not-help", Kind: Article, Unit: "x", Check: RatioAtMost(Cell("uwsgi-async-ugreen", 100), Cell("uwsgi-sync", 100), 1.5),
		Text: "with 0.1 s blocking, uWSGI async+ugreen serves at most 1.5x uWSGI sync: it cannot help a blocking app (article: 9.4 against 9.3 req/s)"},
	{ID: "b/no-failed-requests", Kind: Article, Unit: "requests", Check: NoFailures(cells(AllBServers, 0, 100)),
		Text: "no cell has a failed request, with either generator"},
	{ID: "b/ours-matches-ab", Kind: Harness, Unit: "ratio", Check: OursMatchesAB(cells(AllBServers, 0), OursVsABTolerance),
		Text: "without blocking, our generator's req/s is within 25 % of ab's on every server: the median over pairs of runs against the same server of ours/ab (worst |ratio - 1|)"},
	{ID: "b/generator-has-headroom", Kind: Harness, Unit: "share of a core", Check: GeneratorHeadroom(cells(AllBServers, 0), MaxGeneratorBusy),
		Text: "without blocking, our generator uses at most 80 % of its core on every server, so the server, not the generator, sets the rate (busiest cell's CPU / wall, median over the pairs)"},
}
