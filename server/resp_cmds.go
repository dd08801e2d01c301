//go:build unix

package server

import (
	"bytes"
	"math"
	"strconv"
)

// The commands of RESP. Each runs with the Keyspace locked, takes the command's arguments
// (args[0] is its name; the arguments are views into the connection's input, so whatever is
// stored is copied) and appends its reply to out. Arity is checked before.

func cmdPing(_ *Keyspace, args [][]byte, out []byte) []byte {
	switch len(args) {
	case 1:
		return append(out, "+PONG\r\n"...)
	case 2:
		return appendBulk(out, args[1])
	}
	return appendError(out, "ERR wrong number of arguments for 'ping' command")
}

func cmdSet(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args) != 3 { // NX, XX, EX, PX, GET, KEEPTTL... are not implemented
		return appendError(out, "ERR syntax error")
	}
	setString(ks, args[1], args[2])
	return append(out, "+OK\r\n"...)
}

// setString stores a copy of v at key, replacing whatever was there.
func setString(ks *Keyspace, key, v []byte) {
	if s, ok := ks.keys[string(key)].(*stringValue); ok {
		s.b = append(s.b[:0], v...) // in place: no allocation for a key set again
	} else {
		ks.keys[string(key)] = &stringValue{bytes.Clone(v)}
	}
}

func cmdGet(ks *Keyspace, args [][]byte, out []byte) []byte {
	switch v := ks.keys[string(args[1])].(type) {
	case nil:
		return append(out, nullBulk...)
	case *stringValue:
		return appendBulk(out, v.b)
	}
	return appendError(out, wrongType)
}

func cmdIncr(ks *Keyspace, args [][]byte, out []byte) []byte {
	var n int64
	v, exists := ks.keys[string(args[1])]
	s, isString := v.(*stringValue)
	switch {
	case exists && !isString:
		return appendError(out, wrongType)
	case exists:
		var ok bool
		if n, ok = parseInt(s.b); !ok {
			return appendError(out, notInt)
		}
	default:
		s = &stringValue{}
		ks.keys[string(args[1])] = s
	}
	if n == math.MaxInt64 {
		return appendError(out, "ERR increment or decrement would overflow")
	}
	n++
	s.b = strconv.AppendInt(s.b[:0], n, 10)
	return appendInt(out, n)
}

func cmdDel(ks *Keyspace, args [][]byte, out []byte) []byte {
	n := 0
	for _, k := range args[1:] {
		if _, ok := ks.keys[string(k)]; ok {
			delete(ks.keys, string(k))
			n++
		}
	}
	return appendInt(out, int64(n))
}

func cmdMset(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args)%2 != 1 {
		return appendError(out, "ERR wrong number of arguments for 'mset' command")
	}
	for i := 1; i < len(args); i += 2 {
		setString(ks, args[i], args[i+1])
	}
	return append(out, "+OK\r\n"...)
}

// getList returns the list at key (nil when there is none); false when key holds another type.
func getList(ks *Keyspace, key []byte) (*list, bool) {
	switch v := ks.keys[string(key)].(type) {
	case nil:
		return nil, true
	case *list:
		return v, true
	}
	return nil, false
}

// cmdPush is LPUSH (elements pushed at the head, one after the other) and RPUSH (at the tail).
func cmdPush(ks *Keyspace, args [][]byte, out []byte) []byte {
	l, ok := getList(ks, args[1])
	if !ok {
		return appendError(out, wrongType)
	}
	if l == nil {
		l = &list{}
		ks.keys[string(args[1])] = l
	}
	left := args[0][0] == 'l' || args[0][0] == 'L'
	for _, v := range args[2:] {
		if left {
			l.pushFront(bytes.Clone(v))
		} else {
			l.pushBack(bytes.Clone(v))
		}
	}
	return appendInt(out, int64(l.size))
}

// cmdPop is LPOP and RPOP key [count]: without count, the element (or a null bulk); with count, an
// array of up to count elements (or a null array when the key is missing).
func cmdPop(ks *Keyspace, args [][]byte, out []byte) []byte {
	left := args[0][0] == 'l' || args[0][0] == 'L'
	if len(args) > 3 {
		return appendError(out, "ERR wrong number of arguments for '"+string(bytes.ToLower(args[0]))+"' command")
	}
	count, hasCount := int64(1), len(args) == 3
	if hasCount {
		var errReply string
		if count, errReply = positiveCount(args[2]); errReply != "" {
			return appendError(out, errReply)
		}
	}
	l, ok := getList(ks, args[1])
	switch {
	case !ok:
		return appendError(out, wrongType)
	case l == nil && hasCount:
		return append(out, nullArray...)
	case l == nil:
		return append(out, nullBulk...)
	}
	pop := l.popBack
	if left {
		pop = l.popFront
	}
	if !hasCount {
		out = appendBulk(out, pop())
	} else {
		n := int(min(count, int64(l.size)))
		out = appendArray(out, n)
		for range n {
			out = appendBulk(out, pop())
		}
	}
	if l.size == 0 {
		delete(ks.keys, string(args[1]))
	}
	return out
}

// positiveCount parses the count argument of LPOP, RPOP, SPOP and ZPOPMIN: the count, or Redis's
// error reply (the same for a negative count and for one that is not a number).
func positiveCount(b []byte) (int64, string) {
	n, ok := parseInt(b)
	if !ok || n < 0 {
		return 0, "ERR value is out of range, must be positive"
	}
	return n, ""
}

// cmdLrange is LRANGE key start stop, with Redis's index rules (negative counts from the end,
// out-of-range ends clamped).
func cmdLrange(ks *Keyspace, args [][]byte, out []byte) []byte {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return appendError(out, notInt)
	}
	l, ok := getList(ks, args[1])
	if !ok {
		return appendError(out, wrongType)
	}
	if l == nil {
		return appendArray(out, 0)
	}
	size := int64(l.size)
	if start < 0 {
		start += size
	}
	if stop < 0 {
		stop += size
	}
	start = max(start, 0)
	if start > stop || start >= size {
		return appendArray(out, 0)
	}
	stop = min(stop, size-1)
	out = appendArray(out, int(stop-start+1))
	for i := start; i <= stop; i++ {
		out = appendBulk(out, l.at(int(i)))
	}
	return out
}

func cmdSadd(ks *Keyspace, args [][]byte, out []byte) []byte {
	s, isSet := ks.keys[string(args[1])].(set)
	if !isSet && ks.keys[string(args[1])] != nil {
		return appendError(out, wrongType)
	}
	if s == nil {
		s = set{}
		ks.keys[string(args[1])] = s
	}
	added := 0
	for _, m := range args[2:] {
		if _, ok := s[string(m)]; !ok {
			s[string(m)] = struct{}{}
			added++
		}
	}
	return appendInt(out, int64(added))
}

// cmdSpop is SPOP key [count]: a random member (Go's map order), or an array of up to count.
func cmdSpop(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args) > 3 {
		return appendError(out, "ERR syntax error")
	}
	count, hasCount := int64(1), len(args) == 3
	if hasCount {
		var errReply string
		if count, errReply = positiveCount(args[2]); errReply != "" {
			return appendError(out, errReply)
		}
	}
	s, isSet := ks.keys[string(args[1])].(set)
	switch {
	case !isSet && ks.keys[string(args[1])] != nil:
		return appendError(out, wrongType)
	case s == nil && hasCount:
		return appendArray(out, 0)
	case s == nil:
		return append(out, nullBulk...)
	}
	n := int(min(count, int64(len(s))))
	if hasCount {
		out = appendArray(out, n)
	}
	for m := range s {
		if n == 0 {
			break
		}
		out = appendBulkString(out, m)
		delete(s, m)
		n--
	}
	if len(s) == 0 {
		delete(ks.keys, string(args[1]))
	}
	return out
}

func cmdHset(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args)%2 != 0 {
		return appendError(out, "ERR wrong number of arguments for 'hset' command")
	}
	h, isHash := ks.keys[string(args[1])].(hash)
	if !isHash && ks.keys[string(args[1])] != nil {
		return appendError(out, wrongType)
	}
	if h == nil {
		h = hash{}
		ks.keys[string(args[1])] = h
	}
	added := 0
	for i := 2; i < len(args); i += 2 {
		if v, ok := h[string(args[i])]; ok {
			h[string(args[i])] = append(v[:0], args[i+1]...)
		} else {
			h[string(args[i])] = bytes.Clone(args[i+1])
			added++
		}
	}
	return appendInt(out, int64(added))
}

// cmdZadd is ZADD key score member [score member ...], without flags (NX, XX, GT, LT, CH, INCR).
func cmdZadd(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args)%2 != 0 {
		return appendError(out, "ERR wrong number of arguments for 'zadd' command")
	}
	scores := make([]float64, 0, (len(args)-2)/2)
	for i := 2; i < len(args); i += 2 {
		f, err := strconv.ParseFloat(string(args[i]), 64)
		if err != nil || math.IsNaN(f) {
			return appendError(out, "ERR value is not a valid float")
		}
		scores = append(scores, f)
	}
	z, isZset := ks.keys[string(args[1])].(*zset)
	if !isZset && ks.keys[string(args[1])] != nil {
		return appendError(out, wrongType)
	}
	if z == nil {
		z = &zset{score: map[string]float64{}}
		ks.keys[string(args[1])] = z
	}
	added := 0
	for i, f := range scores {
		if z.add(string(args[3+2*i]), f) {
			added++
		}
	}
	return appendInt(out, int64(added))
}

// cmdZpopmin is ZPOPMIN key [count]: a flat array of member, score pairs, lowest scores first.
func cmdZpopmin(ks *Keyspace, args [][]byte, out []byte) []byte {
	if len(args) > 3 {
		return appendError(out, "ERR syntax error")
	}
	count := int64(1)
	if len(args) == 3 {
		var errReply string
		if count, errReply = positiveCount(args[2]); errReply != "" {
			return appendError(out, errReply)
		}
	}
	z, isZset := ks.keys[string(args[1])].(*zset)
	switch {
	case !isZset && ks.keys[string(args[1])] != nil:
		return appendError(out, wrongType)
	case z == nil:
		return appendArray(out, 0)
	}
	n := int(min(count, int64(len(z.sorted))))
	out = appendArray(out, 2*n)
	for range n {
		m := z.popMin()
		out = appendBulkString(out, m.member)
		out = appendBulkString(out, formatScore(m.score))
	}
	if len(z.sorted) == 0 {
		delete(ks.keys, string(args[1]))
	}
	return out
}

// formatScore formats a score as Redis 7.0 replies it: printf's %.17g, "inf" and "-inf".
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
