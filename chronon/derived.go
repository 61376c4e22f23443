package chronon

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DerivedCounter is a counter computed from others: Expr is an arithmetic
// expression (+ - * / and parentheses, numbers) over counters named
// "unit.counter" and "cycles", the length of the interval. The counter dump
// writes its value for each interval after the counters, and Totals over
// the whole run; a division by zero gives an empty cell (NaN in Totals).
type DerivedCounter struct {
	Name, Expr string
}

// DeriveCounter adds a derived counter to the counter dump and Totals. It
// checks expr against the counters of the units added so far: call it
// after adding them and before running. An error names the counter and the
// part of expr at fault.
func (s *Simulation) DeriveCounter(name, expr string) error {
	if name == "" || strings.ContainsAny(name, " \t\n,") {
		return fmt.Errorf("%w: derived counter name %q (want a non-empty name without spaces or commas)", ErrTopology, name)
	}
	idx := make(map[string]int)
	for i, n := range s.counterNames() {
		idx[n] = i
	}
	if _, dup := idx[name]; dup {
		return fmt.Errorf("%w: derived counter %q has the name of a counter", ErrTopology, name)
	}
	for _, d := range s.derived {
		if d.name == name {
			return fmt.Errorf("%w: derived counter %q defined twice", ErrTopology, name)
		}
	}
	p := &exprParser{src: expr, idx: idx}
	root, err := p.parse()
	if err != nil {
		return fmt.Errorf("%w: derived counter %q: %v", ErrTopology, name, err)
	}
	s.derived = append(s.derived, &derived{name: name, expr: expr, root: root})
	return nil
}

type derived struct {
	name, expr string
	root       *exprNode
}

// counterNames returns the "unit.counter" names of every counter, in the
// dump's column order.
func (s *Simulation) counterNames() []string {
	var names []string
	for _, u := range s.units {
		for _, k := range u.ctrs {
			names = append(names, u.name+"."+k.name)
		}
	}
	return names
}

// Totals returns every counter's total and every derived counter's value
// over the cycles run so far, named as in the counter dump.
func (s *Simulation) Totals() (names []string, values []float64) {
	names = s.counterNames()
	for _, u := range s.units {
		for _, k := range u.ctrs {
			values = append(values, float64(k.c.n))
		}
	}
	vals := values
	for _, d := range s.derived {
		names = append(names, d.name)
		values = append(values, d.root.eval(vals, float64(s.cycle)))
	}
	return names, values
}

// formatDerived formats a derived value for the CSV: empty when undefined.
func formatDerived(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// exprNode is a node of a compiled expression.
type exprNode struct {
	op   byte // '+', '-', '*', '/', 'n' number, 'c' counter, 'y' cycles, 'u' negation
	num  float64
	ctr  int
	l, r *exprNode
}

func (n *exprNode) eval(ctrs []float64, cycles float64) float64 {
	switch n.op {
	case 'n':
		return n.num
	case 'c':
		return ctrs[n.ctr]
	case 'y':
		return cycles
	case 'u':
		return -n.l.eval(ctrs, cycles)
	}
	a, b := n.l.eval(ctrs, cycles), n.r.eval(ctrs, cycles)
	switch n.op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	}
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// exprParser is a recursive-descent parser of
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }
//	factor = number | name | "(" expr ")" | "-" factor
type exprParser struct {
	src string
	pos int
	idx map[string]int
}

func (p *exprParser) parse() (*exprNode, error) {
	if strings.TrimSpace(p.src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.pos < len(p.src) {
		return nil, fmt.Errorf("unexpected %q at offset %d of %q", p.src[p.pos:], p.pos, p.src)
	}
	return n, nil
}

func (p *exprParser) skip() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *exprParser) expr() (*exprNode, error) {
	n, err := p.term()
	for err == nil {
		if p.skip(); p.pos >= len(p.src) || (p.src[p.pos] != '+' && p.src[p.pos] != '-') {
			return n, nil
		}
		op := p.src[p.pos]
		p.pos++
		var r *exprNode
		if r, err = p.term(); err == nil {
			n = &exprNode{op: op, l: n, r: r}
		}
	}
	return nil, err
}

func (p *exprParser) term() (*exprNode, error) {
	n, err := p.factor()
	for err == nil {
		if p.skip(); p.pos >= len(p.src) || (p.src[p.pos] != '*' && p.src[p.pos] != '/') {
			return n, nil
		}
		op := p.src[p.pos]
		p.pos++
		var r *exprNode
		if r, err = p.factor(); err == nil {
			n = &exprNode{op: op, l: n, r: r}
		}
	}
	return nil, err
}

func nameByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case first:
		return false
	}
	return c >= '0' && c <= '9' || c == '.' || c == '[' || c == ']' || c == '-'
}

func (p *exprParser) factor() (*exprNode, error) {
	p.skip()
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("%q ends where an operand is expected", p.src)
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.skip(); p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, fmt.Errorf("missing ) in %q", p.src)
		}
		p.pos++
		return n, nil
	case c == '-':
		p.pos++
		n, err := p.factor()
		if err != nil {
			return nil, err
		}
		return &exprNode{op: 'u', l: n}, nil
	case c >= '0' && c <= '9' || c == '.':
		end := p.pos
		for end < len(p.src) && (p.src[end] >= '0' && p.src[end] <= '9' || p.src[end] == '.' || p.src[end] == 'e') {
			end++
		}
		v, err := strconv.ParseFloat(p.src[p.pos:end], 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q in %q", p.src[p.pos:end], p.src)
		}
		p.pos = end
		return &exprNode{op: 'n', num: v}, nil
	case nameByte(c, true):
		end := p.pos + 1
		for end < len(p.src) && nameByte(p.src[end], false) {
			end++
		}
		name := p.src[p.pos:end]
		p.pos = end
		if name == "cycles" {
			return &exprNode{op: 'y'}, nil
		}
		i, ok := p.idx[name]
		if !ok {
			return nil, fmt.Errorf("unknown counter %q in %q (counters are named unit.counter; cycles is the interval)", name, p.src)
		}
		return &exprNode{op: 'c', ctr: i}, nil
	}
	return nil, fmt.Errorf("unexpected %q at offset %d of %q", p.src[p.pos:], p.pos, p.src)
}
