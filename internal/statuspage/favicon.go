package statuspage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// FaviconPath is where browsers ask for a site's icon on every page; the
// status page and GraphiQL link it too.
const FaviconPath = "/favicon.ico"

// favicon is the icon: a 32×32 PNG in an ICO container (which every
// browser reads at /favicon.ico), drawn here rather than kept as a binary
// file: a blue disc, the fleet, with a white ring and hub, the one cache.
var favicon = func() []byte {
	const size = 32
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	blue := color.NRGBA{R: 0x1f, G: 0x6f, B: 0xd0, A: 0xff}
	white := color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	for y := range size {
		for x := range size {
			r := math.Hypot(float64(x)+0.5-size/2, float64(y)+0.5-size/2)
			switch {
			case r > 15.5:
			case (r > 8.5 && r < 11) || r < 4:
				img.SetNRGBA(x, y, white)
			default:
				img.SetNRGBA(x, y, blue)
			}
		}
	}
	var p bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		panic(fmt.Sprintf("statuspage: favicon: %v", err))
	}
	var ico bytes.Buffer
	// ICONDIR: reserved, type 1 (icon), one image; then its ICONDIRENTRY:
	// width, height, no palette, reserved, 1 plane, 32 bits per pixel,
	// the PNG's size and its offset (6 + 16).
	_ = binary.Write(&ico, binary.LittleEndian, struct {
		Reserved, Type, Count  uint16
		Width, Height, Colors  uint8
		Reserved2              uint8
		Planes, BitsPerPixel   uint16
		BytesInRes, ImageStart uint32
	}{0, 1, 1, size, size, 0, 0, 1, 32, uint32(p.Len()), 22})
	ico.Write(p.Bytes())
	return ico.Bytes()
}()
