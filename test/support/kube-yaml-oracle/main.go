// The reference for "what Kubernetes reads": splits a YAML stream into documents the way
// apimachinery's YAMLReader does (a line starting with "---" followed by nothing but spaces or a
// comment) and decodes each with sigs.k8s.io/yaml's YAMLToJSON (go-yaml v2), the path kubectl,
// Argo CD and Flux take. Prints one line per document: "<first line>\t<JSON>" or
// "<first line>\t!<error>" (JSON never holds a raw newline, so lines are records).
// Built from Debian's golang-k8s-sigs-yaml-dev and golang-gopkg-yaml.v2-dev by the tests.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	reader := bufio.NewReader(os.Stdin)
	var documents [][]byte
	var starts []int
	var current bytes.Buffer
	line, start := 0, 1
	flush := func() {
		if len(bytes.TrimSpace(current.Bytes())) > 0 {
			documents = append(documents, append([]byte(nil), current.Bytes()...))
			starts = append(starts, start)
		}
		current.Reset()
	}
	for {
		text, err := reader.ReadString('\n')
		if len(text) > 0 {
			line++
			if strings.HasPrefix(text, "---") {
				rest := strings.TrimSpace(text[3:])
				if rest == "" || strings.HasPrefix(rest, "#") {
					flush()
					start = line + 1
					if err == io.EOF {
						break
					}
					continue
				}
			}
			current.WriteString(text)
		}
		if err != nil {
			break
		}
	}
	flush()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i, document := range documents {
		converted, err := yaml.YAMLToJSON(document)
		if err != nil {
			fmt.Fprintf(out, "%d\t!%s\n", starts[i], strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintf(out, "%d\t%s\n", starts[i], converted)
	}
}
