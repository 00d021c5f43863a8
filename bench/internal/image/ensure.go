package image

import (
	"context"
	"errors"
	"fmt"
	"io"

	"wsgilab/bench/internal/report"
)

// Ensure finds or builds both images on eng: the base image from the
// archive (its build output to log) while labagent compiles for goarch,
// then the lab layer over it. On a cold machine the two overlap (the agent
// about 19 s, the base image 2 to 2.5 minutes here, mostly on different
// cores: mmdebstrap keeps about one busy).
func Ensure(ctx context.Context, eng Engine, archive Apt, goarch string, log io.Writer) (base, lab report.Image, err error) {
	type agentBuild struct {
		bin []byte
		err error
	}
	agentc := make(chan agentBuild, 1)
	go func() {
		bin, err := BuildAgent(ctx, goarch)
		agentc <- agentBuild{bin, err}
	}()
	base, err = EnsureBase(ctx, eng, archive, log)
	ab := <-agentc
	if err = errors.Join(err, ab.err); err != nil {
		return report.Image{}, report.Image{}, err
	}
	if lab, err = EnsureLab(ctx, eng, base.Ref, ab.bin); err != nil {
		return report.Image{}, report.Image{}, err
	}
	return base, lab, nil
}

// ByImageStep is report.Image.By of an image make test's image step
// (cmd/labimage) built.
const ByImageStep = "labimage"

// Adopt is what a series reports of the images it found (base, lab) on
// the engine, given the image step's record rec (nil: none): each image
// the step built is reported as built, by the step (By, its duration and
// how the base image was built), and the base image's build output is
// returned with it; an image the series built itself, or that the step
// found too, is reported as it is. A record of other images is an error:
// the step and the series did not run the same recipe.
func Adopt(base, lab report.Image, rec *report.ImageRecord) (report.Image, report.Image, string, error) {
	if rec == nil {
		return base, lab, "", nil
	}
	if rec.Base.Ref != base.Ref || rec.Lab.Ref != lab.Ref {
		return base, lab, "", fmt.Errorf("image: the image step's record names %s and %s, but this series runs %s and %s: run both from one checkout",
			rec.Base.Ref, rec.Lab.Ref, base.Ref, lab.Ref)
	}
	log := ""
	if rec.Base.Built && !base.Built {
		base, log = adopted(base, rec.Base), rec.Log
	}
	if rec.Lab.Built && !lab.Built {
		lab = adopted(lab, rec.Lab)
	}
	return base, lab, log, nil
}

// adopted is found as the step that built it recorded it.
func adopted(found, built report.Image) report.Image {
	built.By = ByImageStep
	if built.ID == "" {
		built.ID = found.ID
	}
	return built
}
