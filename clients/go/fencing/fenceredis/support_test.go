package fenceredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/holdfast/holdfast/clients/go/fencing"
)

// durable are the settings New wants; tests add others after them to override.
var durable = []string{"--appendonly", "yes", "--appendfsync", "always"}

// redisServer is a redis-server child process on a free loopback port and a data dir of its own.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	args []string
}

func startRedis(t *testing.T, args ...string) *redisServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &redisServer{addr: addr, dir: t.TempDir(), args: args}
	r.start(t)
	t.Cleanup(r.kill)
	return r
}

// start runs redis-server on r's port and dir and waits until it answers PING.
func (r *redisServer) start(t *testing.T) {
	_, port, _ := net.SplitHostPort(r.addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", r.dir, "--save", ""}, r.args...)
	r.cmd = exec.Command("redis-server", args...)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) { // redis-server announces nothing to wait on
		conn, err := redis.Dial("tcp", r.addr)
		if err == nil {
			_, err = conn.Do("PING")
			conn.Close()
			if err == nil {
				return
			}
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("redis-server on %s did not answer PING: %v", r.addr, err)
		}
	}
}

// kill SIGKILLs the server: no shutdown save, no goodbye.
func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(syscall.SIGCONT) // a stopped server dies at once too
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		_ = r.cmd.Wait()
	}
}

// signal sends sig to the server by PID.
func (r *redisServer) signal(t *testing.T, sig syscall.Signal) {
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func asUnavailable(err error, target **fencing.UnavailableError) bool { return errors.As(err, target) }

func (r *redisServer) pool() *redis.Pool {
	return &redis.Pool{MaxIdle: 32, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", r.addr) }}
}

func (r *redisServer) store(t *testing.T, opts Options) *Store {
	s, err := New(context.Background(), r.pool(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (r *redisServer) do(t *testing.T, args ...interface{}) interface{} {
	conn, err := redis.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reply, err := conn.Do(fmt.Sprint(args[0]), args[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}
