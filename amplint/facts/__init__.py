"""The fact layer: what one file's code does under autocast, computed once and shared by every rule.

- `model`:     the facts' data: `FileFacts`, `Scope`, `Site`, `RegionEntry`, `CallRecord`, `DistRef`;
- `build`:     `collect_facts(module, options, imports)`, the entry point;
- `collector`: the one LibCST pass (regions, bindings, dtype provenance, calls);
- `sites`:     site recognizers, the extension point for new kinds of probability computation;
- `reach`:     functions entered from a region elsewhere (`reached`, `entered`), with their chains;
- `nodes`, `frameworks`, `sitespec`: node readings, framework-implied regions, a site as plain data.

Facts know no rule codes. Nothing here imports rules, the engine, the project
walk or a front end. This package's `__init__` imports nothing, so
`amplint.facts.frameworks` stays usable without LibCST (cached project runs).
"""
