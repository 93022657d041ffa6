package html

import (
	"bytes"
	"fmt"
	"html/template"
	"path"
	"path/filepath"
	"sort"

	"github.com/faultline/faultline/framework/record"
)

// FoldersDir holds the pages a suite renders of a whole run folder, one
// directory per folder.
const FoldersDir = "folders"

// FolderPages renders a suite's own pages of one run folder, which the
// site holds beside its run pages (the drills' side-by-side timelines of
// two runs). It returns no page for a folder it has nothing to say of,
// and an error only for evidence it cannot read.
type FolderPages func(folder string) ([]FolderPage, error)

// FolderPage is one page of a run folder. The site puts Body in the page
// style under Title, with links to the site's index and to the pages of
// the runs it names, and links to it from those run pages and the index.
type FolderPage struct {
	// Name is the page's file name ("drill-pair.html"), unique among the
	// folder's pages.
	Name  string
	Title string
	// Runs are the IDs of the folder's runs the page is about.
	Runs []string
	// Body is the page's content: no script, nothing fetched (the site's
	// rule); a figure of Files is linked, not loaded.
	Body template.HTML
	// Files go beside the page (its figures as PNG, say), by file name.
	Files map[string][]byte
}

// Option changes what Build renders.
type Option func(*buildOptions)

type buildOptions struct {
	folderPages []FolderPages
}

// WithFolderPages adds a suite's pages of every run folder given.
func WithFolderPages(f FolderPages) Option {
	return func(o *buildOptions) { o.folderPages = append(o.folderPages, f) }
}

// folderLink is a folder page as a run page or the index links it.
type folderLink struct {
	Title  string
	Folder string
	// Href is from the site's root.
	Href string
}

// folderView is what a folder page shows.
type folderView struct {
	Style  template.CSS
	Page   FolderPage
	Folder string
	Runs   []folderRun
}

type folderRun struct {
	RunID, Scenario, Arm string
	// Href is from the folder page.
	Href string
}

// addFolderPages renders every suite's pages of every folder into the
// site; it returns the links to them, in folder order, and by run page.
func addFolderPages(site *Site, opts buildOptions, folders []string, runs []runPage) ([]folderLink, map[string][]folderLink, error) {
	byRun := map[string][]folderLink{}
	var links []folderLink
	for _, folder := range folders {
		// A folder given with a trailing slash or as "." is the same
		// folder its runs were read from.
		clean := filepath.Clean(folder)
		dir := FoldersDir + "/" + record.SafeName(filepath.Base(clean))
		for _, render := range opts.folderPages {
			fps, err := render(clean)
			if err != nil {
				return nil, nil, fmt.Errorf("html report: %s: %w", folder, err)
			}
			for _, fp := range fps {
				name := dir + "/" + record.SafeName(fp.Name)
				if _, dup := site.Files[name]; dup {
					return nil, nil, fmt.Errorf("html report: %s: a second page %s of the folder, or of another folder of the same name; give folders of different names", folder, fp.Name)
				}
				v := folderView{Style: style, Page: fp, Folder: filepath.Base(clean)}
				for _, id := range fp.Runs {
					for _, rp := range runs {
						if rp.RunID == id && filepath.Clean(rp.Folder) == clean {
							v.Runs = append(v.Runs, folderRun{RunID: id, Scenario: rp.Scenario, Arm: rp.Arm, Href: "../../" + rp.Href})
							byRun[rp.Href] = append(byRun[rp.Href], folderLink{Title: fp.Title, Folder: v.Folder, Href: name})
						}
					}
				}
				var b bytes.Buffer
				if err := pages.ExecuteTemplate(&b, "folder.tmpl", v); err != nil {
					return nil, nil, fmt.Errorf("html report: rendering %s of %s: %w", fp.Name, folder, err)
				}
				site.Files[name] = b.Bytes()
				files := make([]string, 0, len(fp.Files))
				for f := range fp.Files {
					files = append(files, f)
				}
				sort.Strings(files)
				for _, f := range files {
					fn := path.Join(dir, record.SafeName(f))
					if _, dup := site.Files[fn]; dup {
						return nil, nil, fmt.Errorf("html report: %s: the file %s of page %s is another page's", folder, f, fp.Name)
					}
					site.Files[fn] = fp.Files[f]
				}
				links = append(links, folderLink{Title: fp.Title, Folder: v.Folder, Href: name})
			}
		}
	}
	return links, byRun, nil
}
