//! The conformance matrix page (`ccbench conform`'s `report.html`): case × assertion down,
//! controller × path across, each cell coloured by its verdict, linked to the report of the runs
//! it was judged on, its evidence on hover and listed below. The data is plain text handed over
//! by the binary (the suite lives in `ccbench-conform`, which the report does not depend on).

use super::*;

/// What one cell of the matrix shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixVerdict {
    Pass,
    Fail,
    Undecided,
    NotObservable,
    /// The runs of this cell could not be judged (the run failed or wrote no series).
    Error,
}

impl MatrixVerdict {
    fn class(self) -> &'static str {
        match self {
            MatrixVerdict::Pass => "pass",
            MatrixVerdict::Fail => "fail",
            MatrixVerdict::Undecided => "undecided",
            MatrixVerdict::NotObservable => "nobs",
            MatrixVerdict::Error => "fail",
        }
    }
    fn word(self) -> &'static str {
        match self {
            MatrixVerdict::Pass => "pass",
            MatrixVerdict::Fail => "fail",
            MatrixVerdict::Undecided => "undecided",
            MatrixVerdict::NotObservable => "not observable",
            MatrixVerdict::Error => "error",
        }
    }
}

/// One cell: an assertion on one controller and path.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCell {
    pub verdict: MatrixVerdict,
    /// How the runs went: `1/1 pass`, `3/5 pass, 2 fail`.
    pub tally: String,
    pub evidence: String,
    /// Runs that failed it: an undecided cell with any is marked, so that a quick run (one run
    /// a cell, every cell undecided) still shows where runs failed.
    pub runs_failed: usize,
    /// The report of the runs it was judged on, relative to this page.
    pub link: Option<String>,
}

/// One assertion of a case: its wording and a cell per column (`None`: not run on it).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    pub assertion: String,
    pub cells: Vec<Option<MatrixCell>>,
}

/// A case: its number and title (`A.1 Exiting STARTUP on Bandwidth Plateau`), the sections it
/// checks, its assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCase {
    pub name: String,
    pub sections: String,
    pub rows: Vec<MatrixRow>,
}

/// The whole page. Columns are `(controller, path)` pairs in order; a controller's paths are
/// grouped under its name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConformPage {
    /// `ccbench conform bbr`.
    pub title: String,
    /// Lines under the title: the specification, the grid, runs per cell, how long it took.
    pub notes: Vec<String>,
    pub columns: Vec<(String, String)>,
    pub cases: Vec<MatrixCase>,
    /// Cases not runnable here: `(case, what it needs)`.
    pub not_runnable: Vec<(String, String)>,
    /// Runs that could not be judged, one line each.
    pub errors: Vec<String>,
    /// The `ccbench run` commands that reproduce the cells.
    pub commands: Vec<String>,
}

const MATRIX_STYLE: &str = "body{max-width:1360px}table.matrix td.c{text-align:center;white-space:nowrap;font-weight:700}\
table.matrix td.c a{color:inherit;text-decoration:none}table.matrix td.nobs{background:#eceff3;color:#556}td.none{color:#aaa;text-align:center}\
table.matrix tr.case td{background:#f4f4f8;font-weight:700;border-top:2px solid #ccc;padding-top:5px}table.matrix tr.case td .cn>span{font-weight:400;color:#555}\
table.matrix td.a{padding-left:18px;min-width:16em;max-width:560px}\
div.mx{overflow-x:auto;border-right:1px solid #ddd}table.matrix td.a,table.matrix th.corner{position:sticky;left:0;background:#fff;z-index:1}\
table.matrix tr.case td .cn{position:sticky;left:4px;display:inline-block}table.matrix th{text-align:center;white-space:nowrap}table.matrix th.cc{border-bottom:2px solid #888}\
.key span{display:inline-block;padding:1px 8px;margin-right:6px;font-weight:700}table.matrix td.leanfail{box-shadow:inset 5px 0 #d32f2f}ul.ev{font-size:12px;margin:.2em 0 .6em}ul.ev li{margin:.1em 0}";

/// `report.html` of a conformance run: the matrix, then each cell's evidence, the cases not
/// runnable here, runs that could not be judged, and the commands that reproduce the runs.
pub fn render_conform(page: &ConformPage) -> String {
    let mut out = head(&page.title).replacen("</style>", &format!("{MATRIX_STYLE}</style>"), 1);
    let _ = writeln!(out, "<h1>{}</h1>", escape(&page.title));
    for n in &page.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
    }
    out.push_str(
        "<p class=\"key\"><span style=\"background:#dcf1dc;color:#1b5e20\">pass</span><span style=\"background:#fadcdc;color:#b71c1c\">fail</span>\
<span style=\"background:#fdf1c7;color:#7a5b00\">undecided</span><span style=\"background:#eceff3;color:#556\">not observable</span> \
over the runs, then how many runs passed (<span style=\"box-shadow:inset 5px 0 #d32f2f;background:#fdf1c7;color:#7a5b00\">undecided</span> with a red edge: a run failed); hover a cell for its evidence, click it for its runs' report.</p>\n",
    );
    // A wide grid scrolls sideways inside its box, the assertions' column held at its left
    // edge, so the wording is never squeezed to fit every path on the page.
    let _ = writeln!(out, "<h2>Matrix</h2>\n<div class=\"mx\"><table class=\"matrix\" id=\"matrix\">");
    // Two header rows: the controllers, each over its paths.
    out.push_str("<tr><th class=\"corner\" rowspan=\"2\"></th>");
    let mut i = 0;
    while i < page.columns.len() {
        let cc = &page.columns[i].0;
        let n = page.columns[i..].iter().take_while(|c| &c.0 == cc).count();
        let _ = write!(out, "<th class=\"cc\" colspan=\"{n}\">{}</th>", escape(cc));
        i += n;
    }
    out.push_str("</tr>\n<tr>");
    for (_, path) in &page.columns {
        let _ = write!(out, "<th>{}</th>", escape(path));
    }
    out.push_str("</tr>\n");
    for case in &page.cases {
        let _ = writeln!(
            out,
            "<tr class=\"case\"><td colspan=\"{}\"><span class=\"cn\">{} <span>[{}]</span></span></td></tr>",
            page.columns.len() + 1,
            escape(&case.name),
            escape(&case.sections)
        );
        for row in &case.rows {
            let _ = write!(out, "<tr><td class=\"a\">{}</td>", escape(&row.assertion));
            for (col, cell) in page.columns.iter().zip(row.cells.iter().chain(std::iter::repeat(&None))) {
                match cell {
                    None => out.push_str("<td class=\"none\">—</td>"),
                    Some(c) => {
                        let tip = format!("{} {} · {}: {} ({}) — {}", col.0, col.1, case.name, c.verdict.word(), c.tally, c.evidence);
                        let word = format!("{} {}", c.verdict.word(), runs_passed(&c.tally));
                        let inner = match &c.link {
                            Some(l) => format!("<a href=\"{}\">{}</a>", escape(l), escape(word.trim())),
                            None => escape(word.trim()),
                        };
                        let lean = if c.verdict == MatrixVerdict::Undecided && c.runs_failed > 0 { " leanfail" } else { "" };
                        let _ = write!(out, "<td class=\"c {}{lean}\" title=\"{}\">{inner}</td>", c.verdict.class(), escape(&tip));
                    }
                }
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</table></div>\n");
    if !page.not_runnable.is_empty() {
        out.push_str("<h2>Not runnable here yet</h2>\n<table><tr><th>case</th><th>needs</th></tr>\n");
        for (c, what) in &page.not_runnable {
            let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", escape(c), escape(what));
        }
        out.push_str("</table>\n");
    }
    if !page.errors.is_empty() {
        out.push_str("<h2>Could not be judged</h2>\n<ul class=\"ev\">\n");
        for e in &page.errors {
            let _ = writeln!(out, "<li class=\"warn\">{}</li>", escape(e));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Evidence</h2>\n<p class=\"note\">One run's per cell: a failing one where any failed.</p>\n");
    for case in &page.cases {
        for row in &case.rows {
            let _ = writeln!(out, "<p><b>{}</b> — {}</p>\n<ul class=\"ev\">", escape(&case.name), escape(&row.assertion));
            for ((cc, path), cell) in page.columns.iter().zip(&row.cells) {
                if let Some(c) = cell {
                    let _ =
                        writeln!(out, "<li>{} {}: <b>{}</b> ({}) — {}</li>", escape(cc), escape(path), c.verdict.word(), escape(&c.tally), escape(&c.evidence));
                }
            }
            out.push_str("</ul>\n");
        }
    }
    if !page.commands.is_empty() {
        let _ = writeln!(out, "<h2>Reproduce</h2>\n<pre class=\"summary\">{}</pre>", escape(&page.commands.join("\n")));
    }
    out.push_str("</body></html>\n");
    out
}

/// `1/1` out of a tally `1/1 pass, …`.
fn runs_passed(tally: &str) -> &str {
    tally.split_whitespace().next().filter(|w| w.contains('/')).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(verdict: MatrixVerdict, tally: &str, evidence: &str) -> Option<MatrixCell> {
        Some(MatrixCell {
            verdict,
            tally: tally.into(),
            evidence: evidence.into(),
            runs_failed: tally.matches(" fail").count(),
            link: Some("quic-bbr3/20mbit-20ms/bulk/report.html".into()),
        })
    }

    /// Each case with its section, each cell with its verdict's colour, its runs passed, its
    /// evidence (hover and below) and a link to its runs; controllers grouped over their paths.
    #[test]
    fn the_matrix_shows_each_cell_with_its_case_section_and_evidence() {
        let page = ConformPage {
            title: "ccbench conform bbr".into(),
            notes: vec!["draft-ietf-ccwg-bbr, 1 run per cell".into()],
            columns: vec![("quic:bbr3".into(), "20mbit/20ms".into()), ("quic:bbr3".into(), "20mbit/80ms".into()), ("tcp:bbr".into(), "20mbit/20ms".into())],
            cases: vec![MatrixCase {
                name: "A.1 Exiting STARTUP on Bandwidth Plateau".into(),
                sections: "§5.3.1.1, §5.3.1.2".into(),
                rows: vec![
                    MatrixRow {
                        assertion: "leaves STARTUP within 4 rounds".into(),
                        cells: vec![
                            cell(MatrixVerdict::Pass, "5/5 pass", "2.6–3.0 rounds"),
                            cell(MatrixVerdict::Fail, "0/5 pass, 5 fail", "6.2–6.4 rounds <x>"),
                            None,
                        ],
                    },
                    MatrixRow {
                        assertion: "pacing gain 2.77".into(),
                        cells: vec![
                            cell(MatrixVerdict::Undecided, "1/1 pass", "2.773"),
                            cell(MatrixVerdict::Undecided, "0/1 pass, 1 fail", "2.887"),
                            cell(MatrixVerdict::NotObservable, "0/1 pass, 1 not observable", "no gain"),
                        ],
                    },
                ],
            }],
            not_runnable: vec![("A.11 ACK aggregation".into(), "ACKs held on the reverse path".into())],
            errors: vec![],
            commands: vec!["ccbench run --cc quic:bbr3 --rate 20mbit".into()],
        };
        let html = render_conform(&page);
        assert!(html.contains("A.1 Exiting STARTUP on Bandwidth Plateau <span>[§5.3.1.1, §5.3.1.2]</span>"), "{html}");
        assert!(html.contains("<th class=\"cc\" colspan=\"2\">quic:bbr3</th><th class=\"cc\" colspan=\"1\">tcp:bbr</th>"), "{html}");
        assert!(html.contains("<th>20mbit/20ms</th><th>20mbit/80ms</th><th>20mbit/20ms</th>"));
        // A wide grid scrolls in its own box with the assertions held at its left edge.
        assert!(html.contains("<div class=\"mx\"><table class=\"matrix\" id=\"matrix\">") && html.contains("</table></div>"), "{html}");
        assert!(html.contains("<th class=\"corner\" rowspan=\"2\">") && html.contains("td.a,table.matrix th.corner{position:sticky;left:0"), "{html}");
        let cells: Vec<&str> = html.split("<td class=\"c ").skip(1).map(|c| c.split("</td>").next().unwrap()).collect();
        assert_eq!(cells.len(), 5, "{cells:?}");
        assert!(cells[0].starts_with("pass\"") && cells[0].contains(">pass 5/5</a>"), "{}", cells[0]);
        assert!(cells[1].starts_with("fail\"") && cells[1].contains(">fail 0/5</a>") && cells[1].contains("6.2–6.4 rounds &lt;x&gt;"), "{}", cells[1]);
        assert!(cells[1].contains("title=\"quic:bbr3 20mbit/80ms · A.1 Exiting STARTUP on Bandwidth Plateau: fail"), "{}", cells[1]);
        assert!(cells[2].starts_with("undecided\"") && cells[2].contains(">undecided 1/1</a>"), "no run failed, no red edge: {}", cells[2]);
        assert!(cells[3].starts_with("undecided leanfail\"") && cells[3].contains(">undecided 0/1</a>"), "a run failed: {}", cells[3]);
        assert!(cells[4].starts_with("nobs\"") && cells[4].contains(">not observable 0/1</a>"));
        assert!(cells[0].contains("href=\"quic-bbr3/20mbit-20ms/bulk/report.html\""));
        // The columns not run on show a dash, one per row.
        assert_eq!(html.matches("<td class=\"none\">—</td>").count(), 1);
        // Evidence listed below, per cell; not runnable cases with what they need.
        assert_eq!(html.matches("<li>tcp:bbr 20mbit/20ms").count(), 1, "no cell, no evidence line");
        assert!(html.contains("<li>quic:bbr3 20mbit/80ms: <b>fail</b> (0/5 pass, 5 fail) — 6.2–6.4 rounds &lt;x&gt;</li>"), "{html}");
        assert!(html.contains("<td>A.11 ACK aggregation</td><td>ACKs held on the reverse path</td>"));
        assert!(html.contains("ccbench run --cc quic:bbr3 --rate 20mbit"));
        assert!(!html.contains("<script"), "no script: the report opens offline");
    }
}
