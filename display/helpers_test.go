package display

import "fmt"

func fmtSscanf(s string, r *rune) (int, error) {
	var v int32
	n, err := fmt.Sscanf(s, "%X", &v)
	*r = v
	return n, err
}

func fmtSscanfByte(s string, b *byte) (int, error) {
	var v uint8
	n, err := fmt.Sscanf(s, "%X", &v)
	*b = v
	return n, err
}
