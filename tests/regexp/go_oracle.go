// SPDX-License-Identifier: Apache-2.0
// The Go side of the regexp differential test (tests/regexp/test_regexp_diff.py): Go's own
// regexp package, which the reference tuning plugin matches its sysctl allowlist with. Each
// input line is a pattern and the texts to search, hex-encoded and separated by spaces; each
// output line is "E <hex of the error text>" when the pattern is refused, or "M " and one digit
// per text (1 when regexp.MatchString matches anywhere in it).
package main

import (
	"bufio"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
)

func unhex(field string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(field, "x"))
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		fields := strings.Fields(in.Text())
		pattern, err := unhex(fields[0])
		if err != nil {
			panic(err)
		}
		re, err := regexp.Compile(string(pattern))
		if err != nil {
			out.WriteString("E " + hex.EncodeToString([]byte(err.Error())) + "\n")
			continue
		}
		out.WriteString("M ")
		for _, f := range fields[1:] {
			text, err := unhex(f)
			if err != nil {
				panic(err)
			}
			if re.MatchString(string(text)) {
				out.WriteByte('1')
			} else {
				out.WriteByte('0')
			}
		}
		out.WriteString("\n")
	}
}
