package holdfast

import (
	"net"
	"sync"
	"testing"
)

// stallingProxy is a loopback TCP proxy in front of one address that can freeze the network:
// stall stops forwarding in both directions without closing anything (bytes wait, none are lost);
// resume delivers them in order and forwards again.
type stallingProxy struct {
	addr     string
	target   string
	listener net.Listener

	mu        sync.Mutex
	forwarded chan struct{} // closed while forwarding
	conns     []net.Conn
}

func startProxy(t testing.TB, target string) *stallingProxy {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{addr: listener.Addr().String(), target: target, listener: listener, forwarded: make(chan struct{})}
	close(p.forwarded)
	t.Cleanup(p.close)
	go p.accept()
	return p
}

func (p *stallingProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.forwarded:
		p.forwarded = make(chan struct{})
	default: // already stalled
	}
}

func (p *stallingProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.forwarded:
	default:
		close(p.forwarded)
	}
}

// gate is closed while forwarding; a stalled pump waits on it.
func (p *stallingProxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

func (p *stallingProxy) close() {
	p.resume()
	p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, conn := range p.conns {
		conn.Close()
	}
}

func (p *stallingProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		upstream, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, upstream)
		p.mu.Unlock()
		go p.pump(client, upstream)
		go p.pump(upstream, client)
	}
}

// pump copies src to dst; a stall holds the chunk it read (the kernel buffers the rest).
func (p *stallingProxy) pump(src, dst net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		<-p.gate()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if tcp, ok := dst.(*net.TCPConn); ok {
				tcp.CloseWrite()
			}
			return
		}
	}
}
