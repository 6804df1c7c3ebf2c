/// The inspector page's style sheet (inline; no fonts or images are loaded).
enum InspectorStyle {
    static let css = #"""
    :root { --ink: #1d2330; --muted: #5f6b7a; --line: #d8dde5; --panel: #f6f8fb; --ok: #1e7b34; --bad: #b3261e; --plan: #ff8c00; --cache: #1e9e4a; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fff; }
    main { max-width: 1200px; margin: 0 auto; padding: 16px 20px 40px; }
    h1 { font-size: 20px; margin: 0 0 4px; word-break: break-all; }
    h2 { font-size: 15px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
    .muted { color: var(--muted); }
    .verdict { padding: 8px 12px; border-radius: 6px; background: var(--panel); border-left: 4px solid var(--muted); margin: 10px 0; }
    .verdict.ok { border-color: var(--ok); } .verdict.bad { border-color: var(--bad); }
    .verdict b { font-size: 15px; }
    svg { display: block; width: 100%; }
    svg text { font: 11px system-ui, sans-serif; fill: #fff; pointer-events: none; }
    svg .axis { fill: var(--muted); }
    .map { border: 1px solid var(--line); border-radius: 4px; background: var(--panel); }
    .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0; font-size: 12px; }
    .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
    table { border-collapse: collapse; width: 100%; font-size: 13px; }
    th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
    th { background: var(--panel); font-weight: 600; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
    code, .mono { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
    .rows .row { display: grid; grid-template-columns: 150px 1fr; align-items: center; gap: 8px; margin: 3px 0; }
    .rows .label { font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .seek { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
    .seek input[type=range] { flex: 1; min-width: 240px; }
    .seek input[type=number] { width: 110px; }
    .plan { margin-top: 8px; }
    details { margin-left: 14px; }
    details > summary { cursor: pointer; margin-left: -14px; }
    .tree > details { margin-left: 0; }
    .box { font-weight: 600; }
    .fields { color: var(--muted); font-size: 12px; }
    .leaf { margin-left: 0; padding-left: 0; list-style: none; }
    .finding.warning, .finding.error { color: var(--bad); }
    .errors { color: #fff; background: var(--bad); padding: 8px; margin: 0; white-space: pre-wrap; }
    video { width: 100%; max-height: 360px; background: #000; }
    svg.zoom text { font-size: 11px; fill: #fff; }
    .live-grid { display: grid; grid-template-columns: minmax(0, 1fr) 360px; gap: 16px; align-items: start; }
    @media (max-width: 900px) { .live-grid { grid-template-columns: 1fr; } }
    .live-title { font-weight: 600; margin-bottom: 4px; }
    details.fold { margin-left: 0; }
    footer { margin-top: 30px; font-size: 12px; color: var(--muted); }
    """#
}
