// Command floor is the least a Knative Service can be: an HTTP server that answers 200. Built by
// ko on our functions' base image, it is the floor hack/cluster-floor.py wakes from zero beside
// our functions and webhooks, on the same node at the same moment (docs/cluster.md).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	listener, err := net.Listen("tcp", ":"+port)
	if err == nil {
		// Our processes' line once they listen, which the script's phases read.
		fmt.Println(`{"msg":"serving"}`)
		err = http.Serve(listener, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
