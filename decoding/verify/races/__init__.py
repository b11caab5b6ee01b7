"""The exponential races beneath the candidate laws: the without-replacement law's inclusion probabilities
(`without_replacement`) and gls's Gumbel race (`gumbel`). Pure maths on p and q rows: they import nothing of
verify, so the laws, the rules and the theory above all read them."""
