// Command etcd is the cluster's etcd: one member, embedded (the release's
// own go.etcd.io/etcd/server/v3), serving clients on -listen over plain
// HTTP on loopback, its data in -data-dir. It stops on SIGTERM or SIGINT.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "the member's data directory")
	listen := flag.String("listen", "http://127.0.0.1:2379", "the client URL (loopback)")
	peer := flag.String("peer", "http://127.0.0.1:2380", "the peer URL (loopback)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("etcd: -data-dir: want the member's data directory")
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dir
	cfg.LogLevel = "warn"
	cu, err := url.Parse(*listen)
	if err != nil {
		log.Fatalf("etcd: -listen %q: %v", *listen, err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: -peer %q: %v", *peer, err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd: serving %s", cu)
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd: not ready in 60 s")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Printf("etcd: %v", err)
	}
	e.Close()
}
