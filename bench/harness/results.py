"""What a section measured: cases (one comparison each, with a stated
reference variant), the targets the issue sets, and whole-section skips."""

from dataclasses import dataclass, field

from .timing import Result


@dataclass
class Target:
    """A goal, reported against, never asserted. `kind`: "max_ns" (the
    variant's median at most `value` ns), "min_ratio" / "max_ratio" (the
    variant's median over the reference's at least / at most `value`),
    "max_share" (the variant's median less the median of `minus`, over the
    reference's, at most `value`: what a path adds to what torch costs).
    `over` names another variant to take the place of the case's reference
    in the ratio (the offset path's target where another path is the
    reference)."""

    variant: str
    kind: str
    value: float
    text: str
    minus: str = None
    over: str = None
    need: int = None  # of the cases holding this goal, how many must meet it (None: every one)

    def denominator(self, case):
        """The variant the ratio is taken over: `over`, else the reference."""
        return self.over or case.denominator(self.variant)

    def measured(self, case):
        r = case.results.get(self.variant)
        ref = case.results.get(self.denominator(case))
        if r is None or not r.ok:
            return None
        if self.kind == "max_ns":
            return r.median_ns
        if ref is None or not ref.ok or ref.median_ns <= 0:
            return None
        if self.kind == "max_share":
            less = case.results.get(self.minus)
            if less is None or not less.ok:
                return None
            return (r.median_ns - less.median_ns) / ref.median_ns
        return r.median_ns / ref.median_ns

    def met(self, case):
        m = self.measured(case)
        if m is None:
            return None
        return m <= self.value if self.kind in ("max_ns", "max_ratio", "max_share") else m >= self.value

    @staticmethod
    def from_dict(d):
        return Target(d["variant"], d["kind"], d["value"], d["text"], d.get("minus"), d.get("over"), d.get("need"))

    def as_dict(self, case):
        return {
            "variant": self.variant,
            "kind": self.kind,
            "value": self.value,
            "text": self.text,
            "minus": self.minus,
            "over": self.over,
            "need": self.need,
            "measured": self.measured(case),
            "met": self.met(case),
        }


@dataclass
class Case:
    label: dict  # what distinguishes this case, in column order
    results: dict  # variant name -> timing.Result, in column order
    reference: str  # the variant every ratio is taken against; None: no ratios
    targets: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # anything else worth keeping
    # variant -> the variant its ratio is taken over instead of the
    # reference: a second pair measured in the same rounds (torchferry and
    # torch both at one thread beside both at torch's default count).
    ratio_over: dict = field(default_factory=dict)

    def denominator(self, name):
        return self.ratio_over.get(name, self.reference)

    def references(self):
        """Every variant some ratio is taken over."""
        return {self.reference, *self.ratio_over.values()} - {None}

    def ratio(self, name):
        """median(name) / median(its reference), or None when either is missing."""
        denominator = self.denominator(name)
        if denominator is None:
            return None
        r, ref = self.results.get(name), self.results.get(denominator)
        if r is None or ref is None or not r.ok or not ref.ok or ref.median_ns <= 0:
            return None
        return r.median_ns / ref.median_ns

    def as_dict(self):
        return {
            "label": self.label,
            "reference": self.reference,
            "results": {
                name: dict(r.as_dict(), ratio_to_reference=self.ratio(name))
                for name, r in self.results.items()
            },
            "targets": [t.as_dict(self) for t in self.targets],
            "extra": self.extra,
            "ratio_over": self.ratio_over,
        }

    @staticmethod
    def from_dict(d):
        return Case(
            d["label"],
            {name: Result.from_dict(r) for name, r in d["results"].items()},
            d["reference"],
            [Target.from_dict(t) for t in d["targets"]],
            d.get("extra", {}),
            d.get("ratio_over", {}),
        )


@dataclass
class Section:
    number: int
    key: str  # the --sections name
    title: str
    method: str  # how it is measured and what the reference is
    layout: str = "long"  # "wide": a row per case, a column per variant
    cases: list = field(default_factory=list)
    skipped: str = ""  # the whole section could not run here: why
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    no_ratio: list = field(default_factory=list)  # variants shown without a ratio
    headers: dict = field(default_factory=dict)  # variant -> its column's title where the name says less

    def as_dict(self):
        return {
            "number": self.number,
            "key": self.key,
            "title": self.title,
            "method": self.method,
            "skipped": self.skipped,
            "notes": self.notes,
            "seconds": round(self.seconds, 2),
            "layout": self.layout,
            "no_ratio": self.no_ratio,
            "headers": self.headers,
            "cases": [c.as_dict() for c in self.cases],
        }

    @staticmethod
    def from_dict(d):
        """Back from as_dict(): a section measured in another process."""
        return Section(
            d["number"],
            d["key"],
            d["title"],
            d["method"],
            layout=d.get("layout", "long"),
            cases=[Case.from_dict(c) for c in d["cases"]],
            skipped=d.get("skipped", ""),
            notes=d.get("notes", []),
            seconds=d.get("seconds", 0.0),
            no_ratio=d.get("no_ratio", []),
            headers=d.get("headers", {}),
        )
