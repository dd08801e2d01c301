//go:build unix && !linux

package server

// Off Linux no server runs (see sys_other.go): Splice is Forward.

type splicePipes struct{ live int }

func (p *splicePipes) close() {}

type splicer struct {
	dst    *Conn
	inPipe int
}

func (c *Conn) spliceable(*Conn) bool { return false }
func (c *Conn) startSplice(*Conn)     {}
func (c *Conn) unsentSpliced() int    { return 0 }
func (s *splicer) spliceUpdate()      {}
func (s *splicer) pumpOut(bool)       {}
func (s *splicer) sending() bool      { return false }
func (s *splicer) stopIn()            {}
func (s *splicer) dstGone()           {}
func (c *Conn) endSplices()           {}
