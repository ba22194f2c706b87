"""Terminal report: a score table, then every failed test's feedback."""


def render_text(report):
    out = [f"Submission 提交: {report.submission}",
           f"Score 总分: {report.score:g} / {report.max_score:g}", ""]
    for ex in report.exercises:
        n_pass = sum(t.passed for t in ex.tests)
        out.append(f"  {ex.id:<22} {ex.score:>5g} / {ex.max_score:<5g} ({n_pass}/{len(ex.tests)} tests passed)")
    if report.errors:
        out += ["", "加载提交时的问题 problems while loading the submission:"]
        out += [f"  ! {err}" for err in report.errors]
    for ex in report.exercises:
        failed = [t for t in ex.tests if not t.passed]
        if not failed:
            continue
        out += ["", f"== {ex.id} " + "=" * max(0, 60 - len(ex.id))]
        named = {}
        for t in failed:
            for d in getattr(t, "diagnosis", None) or []:
                named.setdefault(d.get("id"), d)
        if named:
            out.append("可能的错误 likely mistakes:")
            out += [f"  • {d.get('title_zh', '')} / {d.get('title_en', '')} ({d.get('function', '')})"
                    for d in named.values()]
        for t in failed:
            out.append(f"\n✗ {t.name} ({t.score:g}/{t.max_score:g})")
            out += ["  " + ln for ln in t.feedback.splitlines()]
    if report.sandbox:
        out += ["", f"({report.sandbox})"]
    out.append("")
    return "\n".join(out)
