package maintenance

import (
	"fmt"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/cloudprofile"
)

// Versions picks update targets from a CloudProfile's versions by their lifecycle
// classification at Now, as Gardener's version helpers do (pkg/api/core/v1beta1/helper): a
// preview version is never a target; an expired version is one only for a forced update when
// nothing else qualifies; a deprecated version only when no supported one does.
type Versions struct {
	Now time.Time
}

// pickFunc finds a higher version for current among versions: found, the version, or an error.
type pickFunc func(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error)

// versionFilter says whether a version is ruled out.
type versionFilter func(v gardencorev1beta1.ExpirableVersion, parsed *semver.Version) bool

func (p Versions) classification(v gardencorev1beta1.ExpirableVersion) gardencorev1beta1.VersionClassification {
	return cloudprofile.Classification(v, p.Now)
}

// Expired says whether v is expired at Now.
func (p Versions) Expired(v gardencorev1beta1.ExpirableVersion) bool {
	return p.classification(v) == gardencorev1beta1.ClassificationExpired
}

func (p Versions) notExpired(v gardencorev1beta1.ExpirableVersion, _ *semver.Version) bool {
	return p.Expired(v)
}

func (p Versions) notDeprecated(v gardencorev1beta1.ExpirableVersion, _ *semver.Version) bool {
	return p.classification(v) == gardencorev1beta1.ClassificationDeprecated
}

func notLowerOrEqual(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool { return !v.GreaterThan(current) }
}

// sameMinorNotLower keeps versions of current's major.minor not lower than current (semver's
// tilde range ~current).
func sameMinorNotLower(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool {
		return v.Major() != current.Major() || v.Minor() != current.Minor() || v.LessThan(current)
	}
}

func sameMajor(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool {
		return v.Major() != current.Major()
	}
}

func consecutiveMinor(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool {
		return v.Major() != current.Major() || v.Minor() != current.Minor()+1
	}
}

func higherMinor(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool {
		return v.Minor() <= current.Minor()
	}
}

func higherMajor(current *semver.Version) versionFilter {
	return func(_ gardencorev1beta1.ExpirableVersion, v *semver.Version) bool {
		return v.Major() <= current.Major()
	}
}

// latest is the highest version that is not in preview and that no filter rules out.
func (p Versions) latest(versions []gardencorev1beta1.ExpirableVersion, filters ...versionFilter) (string, bool, error) {
	var best *semver.Version
	bestVersion := ""
outer:
	for _, v := range versions {
		if p.classification(v) == gardencorev1beta1.ClassificationPreview {
			continue
		}
		parsed, err := semver.NewVersion(v.Version)
		if err != nil {
			return "", false, fmt.Errorf("error while parsing version '%s': %s", v.Version, err.Error())
		}
		for _, ruledOut := range filters {
			if ruledOut(v, parsed) {
				continue outer
			}
		}
		if best == nil || parsed.GreaterThan(best) {
			best, bestVersion = parsed, v.Version
		}
	}
	return bestVersion, best != nil, nil
}

// autoUpdate is the latest higher version the filters allow that is not expired, preferring one
// that is not deprecated either.
func (p Versions) autoUpdate(versions []gardencorev1beta1.ExpirableVersion, current *semver.Version, filters ...versionFilter) (bool, string, error) {
	filters = append([]versionFilter{p.notExpired, notLowerOrEqual(current)}, filters...)
	if v, ok, err := p.latest(versions, append(filters, p.notDeprecated)...); err != nil || ok {
		return ok, v, err
	}
	v, ok, err := p.latest(versions, filters...)
	return ok, v, err
}

// LatestPatch is the latest higher patch version of current's minor (Kubernetes versions, and
// machine images with update strategy "patch").
func (p Versions) LatestPatch(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	c, err := semver.NewVersion(current)
	if err != nil {
		return false, "", err
	}
	return p.autoUpdate(versions, c, sameMinorNotLower(c))
}

// LatestMinor is the latest higher patch of current's minor if there is one, else the latest
// higher version of current's major (update strategy "minor").
func (p Versions) LatestMinor(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	if found, v, err := p.LatestPatch(versions, current); found || err != nil {
		return found, v, err
	}
	c, _ := semver.NewVersion(current) // LatestPatch parsed it
	return p.autoUpdate(versions, c, sameMajor(c))
}

// LatestOverall is the latest higher patch of current's minor if there is one, else the latest
// higher version at all (update strategy "major").
func (p Versions) LatestOverall(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	if found, v, err := p.LatestPatch(versions, current); found || err != nil {
		return found, v, err
	}
	c, _ := semver.NewVersion(current)
	return p.autoUpdate(versions, c)
}

// ForceToConsecutiveMinor is the forced update of an expired Kubernetes version: the latest
// version of the next minor (exactly +1, Kubernetes allows no skipping), not expired if
// possible, else the latest expired one (the next maintenance moves on from there).
func (p Versions) ForceToConsecutiveMinor(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	c, err := semver.NewVersion(current)
	if err != nil {
		return false, "", err
	}
	filters := []versionFilter{sameMajor(c), consecutiveMinor(c)}
	if v, ok, err := p.latest(versions, append(filters, p.notExpired)...); err != nil || ok {
		return ok, v, err
	}
	v, ok, err := p.latest(versions, filters...)
	return ok, v, err
}

// ForceToNextHigherMinor is the forced update of an expired machine image version with update
// strategy "patch": the latest version of the next higher minor that has versions (of the same
// major).
func (p Versions) ForceToNextHigherMinor(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	c, err := semver.NewVersion(current)
	if err != nil {
		return false, "", err
	}
	return p.forceToNextHigher(versions, func(v *semver.Version) uint64 { return v.Minor() }, c, sameMajor(c), higherMinor(c))
}

// ForceToNextHigherMajor is the forced update of an expired machine image version with update
// strategy "minor": the latest version of the next higher major that has versions.
func (p Versions) ForceToNextHigherMajor(versions []gardencorev1beta1.ExpirableVersion, current string) (bool, string, error) {
	c, err := semver.NewVersion(current)
	if err != nil {
		return false, "", err
	}
	return p.forceToNextHigher(versions, func(v *semver.Version) uint64 { return v.Major() }, c, higherMajor(c))
}

// forceToNextHigher prefers a version that is not expired; it takes an expired one when there
// is none, or when the non-expired one would skip the next higher minor (major), whose
// expired versions are then preferred over skipping it altogether.
func (p Versions) forceToNextHigher(versions []gardencorev1beta1.ExpirableVersion, part func(*semver.Version) uint64, current *semver.Version, filters ...versionFilter) (bool, string, error) {
	v, found, next, err := p.nextHigher(versions, part, current, append(filters, p.notExpired)...)
	if err != nil {
		return false, "", err
	}
	skipped := false
	if found {
		parsed, err := semver.NewVersion(v)
		if err != nil {
			return false, "", err
		}
		skipped = part(parsed) > next
	}
	if !found || skipped {
		if v, found, _, err = p.nextHigher(versions, part, current, filters...); err != nil || !found {
			return false, "", err
		}
	}
	return true, v, nil
}

// nextHigher is the latest version of the lowest higher minor (major) that has a qualifying
// version, and the next higher minor (major) of all versions, qualifying or not.
func (p Versions) nextHigher(versions []gardencorev1beta1.ExpirableVersion, part func(*semver.Version) uint64, current *semver.Version, filters ...versionFilter) (string, bool, uint64, error) {
	type parsedVersion struct {
		version gardencorev1beta1.ExpirableVersion
		parsed  *semver.Version
	}
	sorted := make([]parsedVersion, 0, len(versions))
	for _, v := range versions {
		parsed, err := semver.NewVersion(v.Version)
		if err != nil {
			return "", false, 0, err
		}
		sorted = append(sorted, parsedVersion{v, parsed})
	}
	slices.SortFunc(sorted, func(a, b parsedVersion) int { return a.parsed.Compare(b.parsed) })

	var (
		highest     *semver.Version
		result      string
		next        uint64
		nextIsKnown bool
	)
outer:
	for _, v := range sorted {
		if part(v.parsed) > part(current) && (!nextIsKnown || part(v.parsed) < next) {
			next, nextIsKnown = part(v.parsed), true
		}
		if p.classification(v.version) == gardencorev1beta1.ClassificationPreview {
			continue
		}
		for _, ruledOut := range filters {
			if ruledOut(v.version, v.parsed) {
				continue outer
			}
		}
		if highest != nil && part(v.parsed) > part(highest) {
			break
		}
		highest, result = v.parsed, v.version.Version
	}
	return result, highest != nil, next, nil
}

// Target is the version current moves to: the auto-update's pick, or, when current is already
// the latest the strategy allows but expired, the forced update's pick. Empty when current
// stays; an error when an expired version has nowhere to go.
func Target(versions []gardencorev1beta1.ExpirableVersion, current string, autoUpdate, forceUpdate pickFunc, currentExpired bool) (string, error) {
	found, v, err := autoUpdate(versions, current)
	if err != nil {
		return "", fmt.Errorf("failed to determine a higher patch version for automatic update: %w", err)
	}
	if found {
		return v, nil
	}
	if !currentExpired {
		return "", nil
	}
	found, v, err = forceUpdate(versions, current)
	if err != nil {
		return "", fmt.Errorf("failed to determine version for forceful update: %w", err)
	}
	if !found {
		return "", fmt.Errorf("cannot perform forceful update of expired version %q. No suitable version found in CloudProfile - this is most likely a misconfiguration of the CloudProfile", current)
	}
	return v, nil
}
