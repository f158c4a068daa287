package kb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Layouts of a knowledge directory (see LoadLibrary).
const (
	// LayoutTenants has one directory per tenant under tenants/, and
	// optionally company-wide/ for items an operator publishes to every
	// tenant.
	LayoutTenants = "tenants"
	// LayoutSingleTenant is a directory without tenants/: every item
	// belongs to the deployment's one tenant.
	LayoutSingleTenant = "single-tenant"
)

// Directory names of LayoutTenants.
const (
	TenantsDir     = "tenants"
	CompanyWideDir = "company-wide"
)

// LibraryOptions say what LoadLibrary may assume of the deployment.
type LibraryOptions struct {
	// Tenants are the tenants the deployment serves when it can name them
	// all (the API keys of an auth file without a JWT issuer, or the
	// development tenant); nil when it cannot, as when a JWT issuer names
	// tenants in its tokens. The single-tenant layout needs exactly one.
	Tenants []string
	// CompanyWide publishes the items of company-wide/ to every tenant.
	// Default false: they are not served, and a note says so.
	CompanyWide bool
	// Development is development mode: one anonymous principal holding
	// every permission on loopback, for trying a knowledge directory out
	// before an auth file exists. It is served every item of every tenant
	// directory and of company-wide/ as one set, whatever the owner
	// (Library.Development); an id repeated across them is a LoadError.
	Development bool
	// MissingIsEmpty makes a directory that does not exist an empty
	// library (a note says so) rather than an error: the default directory
	// of an installed binary, which the operator did not name. Items appear
	// on the first sync after the directory is created.
	MissingIsEmpty bool
}

// Library is a knowledge directory loaded for every tenant: one Set per
// tenant, holding that tenant's items and, when published, the company-wide
// ones. It is immutable and safe for concurrent use.
type Library struct {
	layout   string
	byTenant map[string]*Set
	empty    *Set
	notes    []string
	dev      *Set // every item, in development mode

	// root is the directory loaded; stamps what was read of each file, by
	// path relative to root (PendingChanges).
	root        string
	stamps      map[string]fileStamp
	companyWide bool
	digest      string
}

// Development reports whether the library serves development mode's one
// principal, which sees every item whatever its owner: callers then look
// through a nil Viewer.
func (l *Library) Development() bool { return l.dev != nil }

// For returns the set of tenant, empty (never nil) for a tenant without
// knowledge. In development mode every tenant gets the set of every item.
func (l *Library) For(tenant string) *Set {
	if l.dev != nil {
		return l.dev
	}
	if s, ok := l.byTenant[tenant]; ok {
		return s
	}
	return l.empty
}

// Layout returns LayoutTenants or LayoutSingleTenant.
func (l *Library) Layout() string { return l.layout }

// Tenants returns the tenants that have a set, sorted.
func (l *Library) Tenants() []string {
	out := make([]string, 0, len(l.byTenant))
	for t := range l.byTenant {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Notes returns what the load assumed, one sentence each, for the log: the
// layout, the tenant of the single-tenant layout, unowned items, and
// company-wide items that are not published.
func (l *Library) Notes() []string { return slices.Clone(l.notes) }

// LoadLibrary loads the knowledge directory dir.
//
// With a tenants/ directory (LayoutTenants) each tenants/<tenant>/ holds
// the items of that tenant, in any sub-directories; an org, team or
// project item names its owner (the org_id, team_id or project_id it
// applies to) in the "owner" front-matter key, and one without an owner is
// a LoadError, never served. company-wide/ holds company items the operator
// publishes to every tenant when opts.CompanyWide is set; an id repeated
// between company-wide/ and a tenant is a LoadError of the tenant's file.
// Files elsewhere are LoadErrors.
//
// Without tenants/ (LayoutSingleTenant, the layout that predates tenants)
// every item belongs to the deployment's single tenant, opts.Tenants[0];
// items without an owner are seen by every caller of it. When the
// deployment does not have exactly one tenant this layout is refused with
// an error, since one tenant's knowledge would reach another.
//
// The error result is non-nil only when dir (or a directory it needs)
// cannot be read, or the layout does not fit the deployment.
func LoadLibrary(dir string, opts LibraryOptions) (*Library, []LoadError, error) {
	if opts.MissingIsEmpty {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return missingLibrary(dir, opts), nil, nil
		}
	}
	info, err := os.Stat(filepath.Join(dir, TenantsDir))
	switch {
	case err == nil && info.IsDir():
		return loadTenants(dir, opts)
	case err == nil:
		return nil, nil, fmt.Errorf("knowledge: %s is not a directory", filepath.Join(dir, TenantsDir))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("knowledge: %w", err)
	}
	return loadSingle(dir, opts)
}

// missingLibrary is the empty library of a directory that does not exist
// (LibraryOptions.MissingIsEmpty). It has the tenants layout, which fits
// any deployment, so that creating the directory later in either layout
// and syncing serves it.
func missingLibrary(dir string, opts LibraryOptions) *Library {
	l := &Library{layout: LayoutTenants, byTenant: map[string]*Set{}, empty: emptySet(),
		root: dir, stamps: map[string]fileStamp{}, companyWide: opts.CompanyWide}
	if opts.Development {
		l.dev = emptySet()
	}
	l.notes = []string{fmt.Sprintf("%s does not exist: no knowledge is served until it is created and synced (sync-knowledge)", dir)}
	l.digest = l.digestSets()
	return l
}

func loadSingle(dir string, opts LibraryOptions) (*Library, []LoadError, error) {
	if len(opts.Tenants) != 1 {
		who := "tenants named by JWTs"
		if len(opts.Tenants) > 1 {
			who = fmt.Sprintf("%d tenants (%s)", len(opts.Tenants), strings.Join(opts.Tenants, ", "))
		}
		return nil, nil, fmt.Errorf("knowledge: %s has no %s/ directory, so all its items would belong to one tenant, "+
			"but this deployment serves %s: move each tenant's items under %s/<tenant>/ (README, \"Knowledge layout\")",
			dir, TenantsDir, who, TenantsDir)
	}
	tenant := opts.Tenants[0]
	stamps := map[string]fileStamp{}
	items, errs, err := loadItems(dir, "", stamps)
	if err != nil {
		return nil, nil, err
	}
	unowned := 0
	for _, it := range items {
		it.Tenant = tenant
		if it.Owner == "" && it.Layer != LayerCompany {
			unowned++
		}
	}
	set, dupErrs := newSet(items)
	errs = append(errs, dupErrs...)
	for i := range errs {
		errs[i].Tenant = tenant
	}
	sortErrors(errs)
	l := &Library{layout: LayoutSingleTenant, byTenant: map[string]*Set{tenant: set}, empty: emptySet(),
		root: dir, stamps: stamps, companyWide: opts.CompanyWide}
	if opts.Development {
		l.dev = set
	}
	l.digest = l.digestSets()
	l.notes = append(l.notes, fmt.Sprintf("single-tenant layout (no %s/ directory): %d item(s) served to tenant %q only",
		TenantsDir, set.Len(), tenant))
	if unowned > 0 {
		l.notes = append(l.notes, fmt.Sprintf("%d org, team or project item(s) have no owner: every caller of tenant %q sees them; "+
			"give each an \"owner\" (its org_id, team_id or project_id) to scope it", unowned, tenant))
	}
	return l, errs, nil
}

func loadTenants(dir string, opts LibraryOptions) (*Library, []LoadError, error) {
	l := &Library{layout: LayoutTenants, byTenant: map[string]*Set{}, empty: emptySet(),
		root: dir, stamps: map[string]fileStamp{}, companyWide: opts.CompanyWide}
	var errs []LoadError
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: %w", err)
	}
	var shared, every []*Item
	heldBack := 0 // company-wide items not published (no --knowledge-company-wide)
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."), name == TenantsDir:
		case name == CompanyWideDir && e.IsDir():
			items, cwErrs, err := loadItems(filepath.Join(dir, name), name+"/", l.stamps)
			if err != nil {
				return nil, nil, err
			}
			errs = append(errs, cwErrs...)
			for _, it := range items {
				if it.Layer != LayerCompany {
					errs = append(errs, LoadError{Path: it.Path, Reason: fmt.Sprintf(
						"a company-wide item must have layer company, not %s: an org, team or project id means nothing across tenants", it.Layer)})
					continue
				}
				shared = append(shared, it)
			}
			every = append(every, shared...)
			if !opts.CompanyWide && len(shared) > 0 {
				if !opts.Development {
					l.notes = append(l.notes, fmt.Sprintf("%s/ holds %d item(s) that are NOT published: publishing them to every tenant "+
						"takes --knowledge-company-wide", CompanyWideDir, len(shared)))
				}
				heldBack = len(shared)
				shared = nil
			}
		case e.IsDir() || strings.HasSuffix(name, ".md"):
			errs = append(errs, LoadError{Path: name, Reason: fmt.Sprintf(
				"not served: with a %s/ directory, items live under %s/<tenant>/ or %s/", TenantsDir, TenantsDir, CompanyWideDir)})
		}
	}
	tenants, err := os.ReadDir(filepath.Join(dir, TenantsDir))
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: %w", err)
	}
	for _, e := range tenants {
		tenant := e.Name()
		prefix := TenantsDir + "/" + tenant
		switch {
		case strings.HasPrefix(tenant, "."):
			continue
		case !e.IsDir():
			if strings.HasSuffix(tenant, ".md") {
				errs = append(errs, LoadError{Path: prefix, Reason: fmt.Sprintf("not served: items live under %s/<tenant>/", TenantsDir)})
			}
			continue
		}
		items, tErrs, err := loadItems(filepath.Join(dir, TenantsDir, tenant), prefix+"/", l.stamps)
		if err != nil {
			return nil, nil, err
		}
		var kept []*Item
		for _, it := range items {
			if it.Owner == "" && it.Layer != LayerCompany {
				tErrs = append(tErrs, LoadError{Path: it.Path, Reason: fmt.Sprintf(
					`missing "owner": a %s item names the %s it applies to`, it.Layer, OwnerKey(it.Layer))})
				continue
			}
			it.Tenant = tenant
			kept = append(kept, it)
		}
		every = append(every, kept...)
		// Company-wide items come first, so that a tenant's item cannot
		// shadow one the operator published: it is the duplicate.
		all := make([]*Item, 0, len(shared)+len(kept))
		for _, it := range shared {
			all = append(all, cloneCompiled(it))
		}
		set, dupErrs := newSet(append(all, kept...))
		tErrs = append(tErrs, dupErrs...)
		for i := range tErrs {
			tErrs[i].Tenant = tenant
		}
		errs = append(errs, tErrs...)
		l.byTenant[tenant] = set
	}
	sortErrors(errs)
	published := "company-wide items are not published"
	if opts.Development && heldBack > 0 {
		// Development mode serves them all to its one principal: saying
		// "not published" beside "served all" read as a contradiction.
		published = fmt.Sprintf("the %d company-wide item(s) are served to the development principal only "+
			"(with an auth file, publishing them to every tenant takes --knowledge-company-wide)", heldBack)
	}
	if opts.CompanyWide {
		published = fmt.Sprintf("%d company-wide item(s) published to every tenant", len(shared))
		// A tenant without a directory still gets what is published.
		if len(shared) > 0 {
			all := make([]*Item, 0, len(shared))
			for _, it := range shared {
				all = append(all, cloneCompiled(it))
			}
			l.empty, _ = newSet(all)
		}
	}
	if opts.Development {
		all := make([]*Item, 0, len(every))
		for _, it := range every {
			all = append(all, cloneCompiled(it))
		}
		var dupErrs []LoadError
		l.dev, dupErrs = newSet(all)
		errs = append(errs, dupErrs...)
		sortErrors(errs)
		l.notes = append(l.notes, fmt.Sprintf("development mode: the development principal is served all %d item(s) "+
			"of every tenant and company-wide/, whatever their owner; an auth file turns tenants and owners on", l.dev.Len()))
	}
	l.notes = append([]string{fmt.Sprintf("tenants layout: %d tenant(s) with knowledge (%s); %s",
		len(l.byTenant), strings.Join(l.Tenants(), ", "), published)}, l.notes...)
	l.digest = l.digestSets()
	return l, errs, nil
}

// cloneCompiled copies an item with its compiled rules, for a set of its
// own (newSet writes SupersededBy).
func cloneCompiled(it *Item) *Item {
	c := cloneItem(it)
	c.rules = it.rules
	return c
}

func emptySet() *Set {
	s, _ := newSet(nil)
	return s
}

func sortErrors(errs []LoadError) {
	slices.SortStableFunc(errs, func(a, b LoadError) int { return strings.Compare(a.Path, b.Path) })
}
