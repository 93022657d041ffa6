// Command screenshot loads report pages in a headless Chromium (run under
// nice -n 19) and writes each whole page as a PNG beside it (page.html →
// page.screenshot.png), for a person to look at: `make report-screenshot RUN=<run
// folder>`. A page that raises a script error or asks the network for
// anything is an error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline/faultline/internal/browser"
)

func main() {
	width := flag.Int("width", 1300, "viewport width in CSS pixels")
	maxHeight := flag.Int("max-height", 0, "keep only the top N CSS pixels of each page (0: the whole page)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: screenshot [-width N] [-max-height N] PAGE.html...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Args(), *width, float64(*maxHeight)); err != nil {
		fmt.Fprintln(os.Stderr, "screenshot:", err)
		os.Exit(1)
	}
}

func run(pages []string, width int, maxHeight float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(60+30*len(pages))*time.Second)
	defer cancel()
	b, err := browser.Start(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, page := range pages {
		abs, err := filepath.Abs(page)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		url := "file://" + abs
		p, err := b.Open(ctx, url, width)
		if err != nil {
			return err
		}
		if len(p.Errors) > 0 {
			return fmt.Errorf("%s: script errors: %s", page, strings.Join(p.Errors, "; "))
		}
		for _, r := range p.Requests {
			if r != url {
				return fmt.Errorf("%s asks for %s", page, r)
			}
		}
		png, err := p.Screenshot(ctx, maxHeight)
		if err != nil {
			return err
		}
		// Not page.png: a page's own figure may have that name (the
		// drills' drill-pair.html beside its drill-pair.png).
		out := strings.TrimSuffix(page, filepath.Ext(page)) + ".screenshot.png"
		if err := os.WriteFile(out, png, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", out)
	}
	return nil
}
