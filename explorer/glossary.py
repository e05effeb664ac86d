"""The symbols of the pages and lessons: one glossary, the one source of their definitions.

Each :class:`Symbol` is data: the symbol as printed (``"δ"``), its name, a one-line
meaning, and the heading of the section of ``docs/algorithms.md`` that defines it (the
dashboard links to it as ``/docs/algorithms#<anchor>``, a lesson as
``../docs/algorithms.md#<anchor>``). The papers reuse letters (docs/algorithms.md section
0.4): a symbol may have one entry per family, the family being a dashboard page's key
(``"sketching"``, ``"newton"``, ``"adagrad"``, ``"pca"``, ``"fm"``); :func:`entries` gives
the meanings that hold in one family.

Each entry also says how to find the symbol: ``text``, a regular expression for Unicode
text (a page's titles and explanations), and ``tex``, one for the inside of ``$...$`` in a
lesson's Markdown. :func:`used_in` and :func:`used_in_markdown` return the entries a text
uses, and :func:`markdown_list` writes them as a Markdown list (every character of the
glossary's text shown as written: it is data, never markup). The dashboard draws them with
``explorer.dashboard.symbols``; ``tools/lesson_symbols.py`` writes each lesson's
"Symbols in this lesson" cell.

>>> [s.symbol for s in used_in("A shrink subtracts δ = σ_m² from every σᵢ²", "sketching")]
['m', 'σ', 'δ']
>>> next(s for s in entries("pca") if s.symbol == "α").name
'fixed-share rate'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Symbol", "GLOSSARY", "FAMILIES", "DOCS", "entries", "used_in", "used_in_markdown",
           "markdown_list", "escape_markdown"]

FAMILIES = ("sketching", "newton", "adagrad", "pca", "fm")
"""The families a meaning can be limited to: the dashboard pages' keys."""
DOCS = "docs/algorithms.md"
"""The file whose headings the entries' ``section`` names."""

_TEX = {"δ": "delta", "Δ": "Delta", "α": "alpha", "κ": "kappa", "τ": "tau", "μ": "mu", "η": "eta",
        "σ": "sigma", "λ": "lambda", "β": "beta", "Θ": "Theta", "γ": "gamma", "ℓ": "ell",
        "φ": "phi", "Λ": "Lambda"}


@dataclass(frozen=True)
class Symbol:
    """One meaning of one symbol: ``symbol``, ``name``, one-line ``meaning``, the docs
    ``section`` (a heading of :data:`DOCS`, as written there), the ``families`` it holds
    in (empty: every family without an entry of its own), and the regular expressions
    ``text`` and ``tex`` that find it (by default built from the symbol)."""

    symbol: str
    name: str
    meaning: str
    section: str
    families: tuple[str, ...] = ()
    text: str = field(default="", repr=False)
    tex: str = field(default="", repr=False)

    def __post_init__(self):
        if not self.text:
            object.__setattr__(self, "text", _default_text(self.symbol))
        if not self.tex:
            object.__setattr__(self, "tex", _default_tex(self.symbol))
        unknown = set(self.families) - set(FAMILIES)
        if unknown:
            raise ValueError(f"{self.symbol}: unknown families {sorted(unknown)}; allowed: {FAMILIES}")


def _default_text(symbol: str) -> str:
    if symbol.isascii():  # a Latin letter: not inside a word, nor a possessive 's
        return rf"(?<![A-Za-z'’\\]){re.escape(symbol)}(?![A-Za-z'’])"
    return re.escape(symbol)


def _default_tex(symbol: str) -> str:
    if symbol in _TEX:
        return rf"\\{_TEX[symbol]}(?![A-Za-z])|{re.escape(symbol)}"
    if symbol.isascii():
        return rf"(?<![A-Za-z\\]){re.escape(symbol)}(?![A-Za-z])"
    return re.escape(symbol)


NEVER = r"(?!)"
"""A pattern that matches nothing (a symbol never looked for in that kind of text)."""

S01, S02, S04 = ("0.1 Streams and sketches", "0.2 Online learners",
                 "0.4 Symbols that mean different things in different families")
S21, S22 = "2.1 Update", "2.2 Guarantees"
S31, S32, S34 = ("3.1 Curvature matrices", "3.2 One round (`SketchedOnlineNewton.learn`)",
                 "3.4 μ and η")
S41, S44, S45, S48 = ("4.1 The common round", '4.4 ADA-FD (`variant="fd"`, Algorithms 1-2)',
                      '4.5 ADA-FFD (`variant="ffd"`, Algorithms 3-4)',
                      "4.8 Defaults and the paper's synthetic task")
S53, S54, S55, S57 = ("5.3 Fixed share", "5.4 Adaptive best subset of experts (Algorithm 1)",
                      "5.5 Online adaptive PCA (Algorithm 4)", "5.7 Adaptive regret and comparators")
S61, S62, S63, S64, S65 = ("6.1 Generalized FD (Algorithms 2-3)", "6.2 The compact convex FM",
                           "6.3 FTRL (Algorithm 1) — `FTRLFM`", "6.4 S-FTRL (Algorithm 4) — `SketchedFTRL`",
                           "6.5 OGD baseline — `OGDFM`")
NEWTON, ADAGRAD, PCA, FM = ("newton",), ("adagrad",), ("pca",), ("fm",)
_MATRIX = (r"(?<![A-Za-z'’\\])X(?![₊₋])(?=ᵀ|\^T|\^\\top|_k|ₖ|⁻|\^\{?-|[ ]?[−-][ ]|[ ]?\+)"
           r"|‖X(?![₊₋])|(?<=[(ᵀ])X(?![A-Za-z₊₋])")
"""A matrix letter X next to a transpose, subscript k, inverse, + or −, or inside ‖, ( or
after ᵀ: so that the article "A" of a sentence is not the matrix A."""


def _matrix(letter: str) -> str:
    return _MATRIX.replace("X", letter)


GLOSSARY: tuple[Symbol, ...] = (
    # -- streams and sketches (docs/algorithms.md section 0.1)
    Symbol("m", "sketch size", "rows of the sketch's buffer; after a shrink at most m − 1 are non-zero "
           "(the fast variants keep 2m)", S01),
    Symbol("d", "dimension", "the number of entries of each row", S01),
    Symbol("d", "dimension", "the number of entries of each row x_t (the paper's n)", S55, PCA),
    Symbol("n", "stream length", "the number of rows (rounds) in the stream", S01),
    Symbol("n", "dimension (PCA paper)", "in 1/(n − k) and α/n: the dimension of x_t, the paper's n "
           "(the dashboard's sidebar n is the stream length)", S55, PCA),
    Symbol("k", "target rank", "A_k is the best rank-k approximation of A; the bounds hold for every k < m",
           S01, text=r"(?<![A-Za-z'’\\])k(?![A-Za-z'’])"),
    Symbol("k", "subspace dimension", "the number of directions each method keeps (a rank-k projection)",
           S55, PCA),
    Symbol("t", "round", "rows (rounds) consumed so far; a_t is the t-th row", S01),
    Symbol("A", "the stream's rows", "the rows seen so far stacked (n × d); AᵀA is what a sketch "
           "approximates", S01, text=_matrix("A")),
    Symbol("A_k", "best rank-k approximation", "the truncated SVD of A: the best any rank-k matrix "
           "does", S01, text=r"A_k|Aₖ", tex=r"A_\{?k\}?(?![A-Za-z])"),
    Symbol("B", "the sketch", "its rows stand in for the stream: BᵀB approximates AᵀA", S01,
           text=_matrix("B") + r"|(?<![A-Za-z'’\\])B(?=\)| \(| [a-z]| keeps)"),
    Symbol("B", "a method's subspace", "an orthonormal basis (d × k) of the subspace a method keeps",
           S57, PCA, text=_matrix("B") + r"|subspace B"),
    Symbol("B₊", "S-FTRL's positive sketch", "Frequent Directions sketch of the rounds with q > 0 "
           "(the model over-predicted)", S64, FM, text=r"B₊|B\+", tex=r"B_\{?\+\}?|B\+"),
    Symbol("B₋", "S-FTRL's negative sketch", "Frequent Directions sketch of the rounds with q < 0 "
           "(the model under-predicted)", S64, FM, text=r"B₋|B−", tex=r"B_\{?-\}?|B−"),
    Symbol("I", "identity", "the identity matrix: αI adds α to every eigenvalue", S01,
           text=r"(?<=[α₀δ])I|(?<![A-Za-z'’\\])I(?= ?[+)/]| \+)"),
    Symbol("σ", "singular value", "σ₁ ≥ σ₂ ≥ …: the buffer's singular values; the σᵢ² are the "
           "eigenvalues of BᵀB", S01),
    Symbol("σ", "shrink amount (lesson 4)", "σ_t: the τ-th largest squared singular value that "
           "ADA-FD's shrink subtracts in round t", S44, ADAGRAD),
    Symbol("σ", "singular value", "σᵢ: the sketch's singular values (σ alone, in the notes: the "
           "synthetic ratings' noise level)", S01, FM),
    Symbol("δ", "shrink amount", "δ = σ_m² of the full buffer, subtracted from every σᵢ² at a shrink",
           S01),
    Symbol("δ", "regularizer of H", "H = δI + (SᵀS)^½: δ keeps H invertible (the shrink amount is "
           "written s or λ_τ here)", S41, ADAGRAD),
    Symbol("Δ", "total shrink", "Δ = Σ δ_t, the mass shrunk away so far: ‖AᵀA − BᵀB‖₂ ≤ Δ", S01),
    Symbol("α", "RFD's regularizer", "α = α₀ + Δ/2: RFD adds αI to BᵀB, half of what FD shrank away",
           S21, text=r"α(?!₀|_0)", tex=r"\\alpha(?![A-Za-z]|_\{?0)|α(?!₀|_0)"),
    Symbol("α", "fixed-share rate", "each round gives back weight α evenly: every weight stays "
           "at least α/n", S53, PCA, text=r"α(?!₀|_0)", tex=r"\\alpha(?![A-Za-z]|_\{?0)|α(?!₀|_0)"),
    Symbol("α₀", "initial regularizer", "the α before any shrink (the slider); FD uses BᵀB + α₀I "
           "throughout", S01, text=r"α₀|α_0|alpha0", tex=r"\\alpha_\{?0\}?|α₀"),
    Symbol("κ", "condition number", "largest over smallest eigenvalue of a positive definite matrix; "
           "∞ when it is singular", S01),
    Symbol("λ", "eigenvalue", "λᵢ: an eigenvalue; λ_max, λ_min: the largest and the smallest", S01),
    Symbol("λ", "eigenvalue", "λᵢ: an eigenvalue; λ_τ, the τ-th largest of M, is what ADA-FFD's "
           "shrink subtracts", S45, ADAGRAD),
    Symbol("Σ", "sum", "a sum over the rounds so far (Δ = Σ δ_t)", S01, tex=NEVER),
    Symbol("rank", "sketch rank", "occupied rows of a sketch's buffer (at least the algebraic rank "
           "of B)", S01, text=r"(?<![A-Za-z-])rank(?![A-Za-z-])",
           tex=r"\\(?:mathrm|operatorname)\{rank\}"),
    Symbol("rank", "rank", "the number of directions a subspace or projection keeps", S55, PCA,
           text=r"(?<![A-Za-z-])rank(?![A-Za-z])", tex=r"\\(?:mathrm|operatorname)\{rank\}"),
    # -- online learners (section 0.2)
    Symbol("x", "input row", "the round's input x_t (its features)", S02,
           text=r"(?<![A-Za-z'’\\])x(?=ᵀ|\)|ₜ|_t| [−+)]|$)"),
    Symbol("y", "label", "the round's label y_t (or target)", S02,
           text=r"(?<![A-Za-z'’\\])y(?= = | ∈)"),
    Symbol("z", "prediction", "the learner's prediction for the round's row (before the label)", S02,
           text=r"(?<![A-Za-z'’\\])z(?= = |\)|ₜ)"),
    Symbol("g", "gradient", "the gradient of the round's loss, g = l'(z, y) x", S02,
           text=r"(?<![A-Za-z'’\\])g(?=ᵀ| gᵀ|$|[.,)])"),
    Symbol("w*", "best fixed predictor", "the linear predictor with the least loss on the whole "
           "stream, in hindsight: regret is measured against it", S02, text=r"w\*", tex=r"w\^\{?\*\}?"),
    Symbol("μ", "exp-concavity constant", "each gradient enters H with weight μ + η; 1/(8C²) for the "
           "squared loss", S34),
    Symbol("η", "the shared η", "a step size or a weight: what it is depends on the family", S04,
           text=r"η(?!₀)"),
    Symbol("η", "SON curvature weight", "each gradient enters H with weight μ + η: a larger η gives "
           "shorter steps", S34, NEWTON, text=r"η(?!₀)"),
    Symbol("η", "step size", "the update β ← β − η H⁻¹ g", S41, ADAGRAD, text=r"η(?!₀)"),
    Symbol("η", "learning rate", "the rate of the exponentiated update of W_t", S55, PCA,
           text=r"η(?!₀)"),
    Symbol("η", "FTRL step size", "FTRL and S-FTRL play Θ = −η × (the sum of past gradients)", S63,
           FM, text=r"η(?!₀)"),
    Symbol("η₀", "OGD's step size", "OGD's first step size, then η₀/√t", S65, FM,
           text=r"η₀|η_0", tex=r"\\eta_\{?0\}?"),
    Symbol("τ", "τ", "a soft threshold (sketched Newton) or a sketch size (AdaGrad)", S04),
    Symbol("τ", "soft threshold", "τ(z) = sign(z) max(|z| − C, 0): how far the prediction left the "
           "slab", S32, NEWTON),
    Symbol("τ", "AdaGrad's sketch size", "the directions ADA-FD and ADA-FFD keep (the page sets τ = m)",
           S44, ADAGRAD),
    Symbol("γ", "first-order step size", "OGD's step size γ/√t in lesson 3 (not SON's)", S34, NEWTON),
    # -- sketched Newton (section 3)
    Symbol("H", "curvature matrix", "the matrix a Newton step inverts: α₀I + BᵀB (FD-SON), BᵀB + αI "
           "(RFD-SON)", S31, NEWTON),
    Symbol("H", "proximal matrix", "H = δI + G^½ (ADA-FULL) or δI + (SᵀS)^½ (ADA-FD, ADA-FFD)",
           S41, ADAGRAD),
    Symbol("H", "stacked scaled rows", "the rows √|q| â of one sign, stacked: B₊ or B₋ sketches HᵀH",
           S61, FM),
    Symbol("C", "slab radius", "predictions are clipped to [−C, C]", S32, NEWTON,
           text=r"(?<![A-Za-z'’\\])C(?![A-Za-z'’_])"),
    Symbol("C", "the gradients, stacked", "lesson 4's bound Δ ≤ ‖C − C_k‖²_F / (τ − k)", S44, ADAGRAD,
           text=_matrix("C")),
    Symbol("C_s", "segment covariance", "the covariance of the stream's segment s", S57, PCA,
           text=r"C_s|Cₛ", tex=r"C_\{?s\}?"),
    Symbol("S", "second moment", "S = XᵀX/n, the rows' second moment (for the whitened labels)", S34,
           NEWTON, text=r"(?<![A-Za-z'’\\])S(?=\^|⁻| = )"),
    # -- AdaGrad on a sketch (section 4)
    Symbol("β", "weights", "β_t: the learner's weights; β* the comparator", S41, ADAGRAD),
    Symbol("β*", "comparator", "the weights of the targets y = β*ᵀx (the regret's comparator)", S48,
           ADAGRAD, text=r"β\*", tex=r"\\beta\^\{?\*\}?"),
    Symbol("G", "sum of outer products", "G = Σ g gᵀ: ADA-FULL's exact matrix", S41, ADAGRAD,
           text=r"(?<![A-Za-z'’\\])G(?![A-Za-z'’])"),
    Symbol("S", "ADA-FD's sketch", "τ rows; SᵀS approximates G", S44, ADAGRAD,
           text=_matrix("S") + r"|(?<![A-Za-z'’\\])S(?=ᵀ|_t)"),
    Symbol("M", "ADA-FFD's small matrix", "2τ × 2τ with SᵀS = V M Vᵀ", S45, ADAGRAD,
           text=r"(?<![A-Za-z'’\\])M(?![A-Za-z'’-])"),
    Symbol("V", "ADA-FFD's basis", "d × 2τ, its first r columns orthonormal", S45, ADAGRAD,
           text=r"(?<![A-Za-z'’\\])V(?![A-Za-z'’-])"),
    Symbol("r", "ADA-FFD's rank", "occupied columns of V: it cycles from τ − 1 to 2τ", S45, ADAGRAD,
           text=r"(?<![A-Za-z'’\\])r(?= = |\))"),
    Symbol("s", "ADA-FFD's shrink amount", "s = λ_τ, subtracted from every eigenvalue of M", S45,
           ADAGRAD, text=r"(?<![A-Za-z'’\\])s(?= = | from)"),
    Symbol("Λ", "eigenvalues", "the diagonal matrix of eigenvalues (M = U Λ Uᵀ)", S45, ADAGRAD),
    Symbol("M", "regularized Gram matrix", "M = AᵀA + α₀I; M_FD and M_RFD are the sketches'", S22,
           ("sketching",), text=r"(?<![A-Za-z'’\\])M(?=_| =|\))"),
    # -- online adaptive PCA (section 5)
    Symbol("W_t", "density matrix", "weights over the directions to discard: trace 1, eigenvalues "
           "≤ 1/(n − k)", S55, PCA, text=r"W_t|Wₜ", tex=r"W_\{?t"),
    Symbol("v", "weights before fixed share", "the weights after the exponentiated update", S53, PCA,
           text=r"(?<![A-Za-z'’\\])v(?= ?[‖)])"),
    Symbol("ŵ", "weights after fixed share", "ŵ = α/n + (1 − α) v", S53, PCA, tex=r"\\hat\s*\{?w\b"),
    Symbol("ℓ", "losses", "ℓ_t: the experts' losses in round t", S54, PCA),
    Symbol("P_t", "projection", "the rank-k projection the learner plays in round t", S55, PCA,
           text=r"P_t|Pₜ", tex=r"P_\{?t\b"),
    # -- factorization machines (section 6)
    Symbol("Θ", "FM parameters", "the (d + 1) × (d + 1) symmetric matrix of the model: z = âᵀΘâ",
           S62, FM),
    Symbol("â", "augmented row", "â = [a; 1]: the feature row a with a 1 appended for the bias", S62,
           FM, text=r"â", tex=r"\\hat\s*\{?\s*a(?![A-Za-z])|â"),
    Symbol("q", "loss derivative", "q = φ'(z): its sign sends the round to B₊ or B₋", S63, FM,
           text=r"(?<![A-Za-z'’\\])q(?![A-Za-z'’])"),
    Symbol("φ", "loss", "the loss as a function of the prediction z", S62, FM),
)
"""Every meaning of every symbol the dashboard pages and the lessons use."""


def entries(family: str | None = None) -> tuple[Symbol, ...]:
    """The meanings that hold in ``family``: for each symbol its entry for the family if
    it has one, else its general entry (``None``: the general entries only).

    >>> [s.name for s in entries("adagrad") if s.symbol == "δ"]
    ['regularizer of H']
    """
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES} or None, not {family!r}")
    own = {s.symbol for s in GLOSSARY if family in s.families}
    return tuple(s for s in GLOSSARY
                 if (family in s.families) or (not s.families and s.symbol not in own))


def used_in(text: str, family: str | None = None) -> tuple[Symbol, ...]:
    """The entries of ``family`` whose symbol ``text`` (Unicode, no TeX) uses, in glossary order."""
    return tuple(s for s in entries(family) if re.search(s.text, text, re.MULTILINE))


_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`]*`", re.S)


def used_in_markdown(markdown: str, family: str | None = None) -> tuple[Symbol, ...]:
    """The entries of ``family`` a lesson's Markdown uses: inside ``$...$`` by their TeX
    pattern, in the prose by their text pattern (non-Latin symbols only: a Latin letter in
    prose is a word); code spans are not read.

    >>> [s.symbol for s in used_in_markdown(r"a shrink of $\\delta$ lifts $\\alpha$; α₀ is fixed")]
    ['δ', 'α', 'α₀']
    """
    markdown = _CODE.sub(" ", markdown)
    math = " ".join(a or b for a, b in _MATH.findall(markdown))
    prose = _MATH.sub(" ", markdown)
    return tuple(s for s in entries(family)
                 if re.search(s.tex, math) or (not s.symbol.isascii() and re.search(s.text, prose)))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|$~&#])")


def escape_markdown(text: str) -> str:
    """``text`` as Markdown that shows exactly its characters (no emphasis, math, link or HTML).

    >>> escape_markdown("σ_m² <b>")
    'σ\\\\_m² \\\\<b\\\\>'
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_list(symbols, href) -> str:
    """One Markdown list item per symbol: **symbol** name: meaning ([docs § N](href(section))).

    ``href(section)`` gives the link target of a docs heading (the caller knows where the
    docs are served). The glossary's text is escaped: it shows as written.

    >>> print(markdown_list(entries("sketching")[4:5], lambda section: "#x"))
    - **t** (round): rows (rounds) consumed so far; a\\_t is the t-th row · [docs § 0.1](#x)
    """
    return "\n".join(
        f"- **{escape_markdown(s.symbol)}** ({escape_markdown(s.name)}): {escape_markdown(s.meaning)}"
        f" · [docs § {s.section.split(' ')[0]}]({href(s.section)})" for s in symbols)
