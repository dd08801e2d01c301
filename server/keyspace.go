//go:build unix

package server

import (
	"cmp"
	"slices"
	"sync"
)

// Keyspace is the RESP server's in-memory database: keys holding strings, lists, sets, hashes
// and sorted sets, as in Redis, without expiry or persistence. Every loop of a server shares one
// Keyspace; RESP.OnData holds its lock while it runs the commands of one read. Like Redis without
// maxmemory, it grows with what clients store.
type Keyspace struct {
	mu   sync.Mutex
	keys map[string]any // *stringValue, *list, set, hash or *zset
}

// NewKeyspace returns an empty Keyspace.
func NewKeyspace() *Keyspace { return &Keyspace{keys: map[string]any{}} }

// The value types. A string is a pointer so that SET of an existing key rewrites it in place.
type (
	stringValue struct{ b []byte }
	set         map[string]struct{}
	hash        map[string][]byte
)

// list is a double-ended queue of elements in a ring buffer: LPUSH, RPUSH, LPOP and RPOP are O(1).
type list struct {
	ring       [][]byte
	head, size int
}

func (l *list) at(i int) []byte { return l.ring[(l.head+i)%len(l.ring)] }

func (l *list) grow() {
	if l.size < len(l.ring) {
		return
	}
	ring := make([][]byte, max(8, 2*len(l.ring)))
	for i := range l.size {
		ring[i] = l.at(i)
	}
	l.ring, l.head = ring, 0
}

func (l *list) pushFront(v []byte) {
	l.grow()
	l.head = (l.head - 1 + len(l.ring)) % len(l.ring)
	l.ring[l.head] = v
	l.size++
}

func (l *list) pushBack(v []byte) {
	l.grow()
	l.ring[(l.head+l.size)%len(l.ring)] = v
	l.size++
}

func (l *list) popFront() []byte {
	v := l.ring[l.head]
	l.ring[l.head] = nil
	l.head = (l.head + 1) % len(l.ring)
	l.size--
	return v
}

func (l *list) popBack() []byte {
	i := (l.head + l.size - 1) % len(l.ring)
	v := l.ring[i]
	l.ring[i] = nil
	l.size--
	return v
}

// zset is a sorted set: each member's score, and the members sorted by score, then by member
// (bytewise), Redis's order.
type zset struct {
	score  map[string]float64
	sorted []zmember
}

type zmember struct {
	score  float64
	member string
}

func compareZ(a, b zmember) int {
	if c := cmp.Compare(a.score, b.score); c != 0 {
		return c
	}
	return cmp.Compare(a.member, b.member)
}

// add sets member's score; it returns true if member is new.
func (z *zset) add(member string, score float64) bool {
	old, exists := z.score[member]
	if exists {
		if old == score {
			return false
		}
		i, _ := slices.BinarySearchFunc(z.sorted, zmember{old, member}, compareZ)
		z.sorted = slices.Delete(z.sorted, i, i+1)
	}
	z.score[member] = score
	m := zmember{score, member}
	i, _ := slices.BinarySearchFunc(z.sorted, m, compareZ)
	z.sorted = slices.Insert(z.sorted, i, m)
	return !exists
}

// popMin removes and returns the member with the lowest score.
func (z *zset) popMin() zmember {
	m := z.sorted[0]
	z.sorted = z.sorted[1:]
	delete(z.score, m.member)
	return m
}
