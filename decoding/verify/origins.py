"""How an emitted token came to be (EmittedRecord.kind): an accepted draft, a residual sample,
a bonus at a leaf, or a residual sample that hit a drafted child (hu_greedy descends into it)."""

DRAFT, RESIDUAL, BONUS, RESIDUAL_HIT = "draft", "residual", "bonus", "residual-hit"
ORIGINS = (DRAFT, RESIDUAL, BONUS, RESIDUAL_HIT)
